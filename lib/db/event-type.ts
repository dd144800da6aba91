/**
 * An event's type, `<resource>.created`, `.updated` or `.deleted`, as SQL over a change outbox
 * row (`table`, its name or alias): the events' list and filters, and the webhooks' fan-out,
 * name it alike.
 */
export const eventType = (table = 'change_outbox') => `${table}.resource || '.' || ${table}.action || 'd'`
