import { Type } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../lib/http/list-query.js'
import { MAX_POSITION } from '../../../../lib/http/limits.js'
import { Envelope, errorResponses, ListResponse, NotModified, ReadHeaders, Timestamp, TOKEN_OR_KEY } from '../../../../schemas/common.js'

export const eventsTag = { name: 'events', description: 'The change feed: every create, update and delete of a student, client, role or user; a record\'s events in the order its changes committed' }

/** An event's type: its resource and what happened to it. */
export const EVENT_TYPE_PATTERN = '^[a-z][a-z_]*\\.(created|updated|deleted)$'

export const Event = Type.Object({
  id: Type.Integer({ minimum: 1, description: 'The event\'s position in the feed: events come in increasing id; a record\'s in the order its changes committed, those of different records in the order each change\'s last write finished. Not every number is an event\'s.' }),
  // A string, not an enum: a resource added to the service has events with no change here.
  type: Type.String({ pattern: EVENT_TYPE_PATTERN, description: '`<resource>.created`, `.updated` or `.deleted`: `student.*`, `client.*`, `role.*`, `user.*`, or of a resource added since', examples: ['student.created'] }),
  resource: Type.String({ description: 'What changed: `student`, `client`, `role`, `user`, or a resource added since', examples: ['student'] }),
  resource_id: Type.Integer({ minimum: 1, description: 'Its id' }),
  occurred_at: { ...Timestamp, description: 'When the change\'s transaction began' },
  request_id: Type.Union([Type.String(), Type.Null()], { description: 'The id of the request that made the change, as its `X-Request-Id` carries it' }),
  data: Type.Object({}, { additionalProperties: true, description: 'The record after the change; before it, for a delete. As the resource\'s GET shows it, never with a secret (a user\'s password)' }),
  changed: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'Of an update, the fields it changed (a new password is named, its value never shown); null otherwise' })
}, { $id: 'Event', additionalProperties: false })

/** What lists of events filter on; they come in id order, which is commit order, only. */
export const eventListFields: ListFields = {
  type: { type: 'text', operators: ['eq', 'in'], description: 'the event\'s type, `student.created`' },
  resource: { type: 'text', column: 'resource', operators: ['eq', 'in'] },
  resource_id: { type: 'integer', column: 'resource_id', operators: ['eq', 'in'] },
  occurred_at: { type: 'timestamp', column: 'at', operators: ['gt', 'gte', 'lt', 'lte'], description: 'when the change\'s transaction began' }
}

/** The stream takes the list's filters and where to begin, and pages itself. */
const streamQuery = Type.Omit(listQuerySchema(eventListFields, undefined, MAX_POSITION), ['limit', 'count'])

export const eventSchemas = {
  index: {
    tags: [eventsTag.name],
    security: TOKEN_OR_KEY,
    operationId: 'events.index',
    summary: 'List events',
    description: 'The events after `after` (an event\'s id) or `cursor`, in id order (a record\'s in the order its changes committed), filtered as asked, `limit` at a time (default 100, at most 1000); needs event-list, and shows the events of a resource only to a caller who may list it (`client-list` for `client.*`; students are public). ' +
      'A page waits for the writing transactions in flight in the database to end (a few milliseconds; one held open longer holds the page back, 503 past HANDLER_TIMEOUT), so that a reader following `next` sees every event once, whatever commits meanwhile on any instance. `Link: <…>; rel="next"` is always there: the page after the last event shown, or, once the events are all read, where to poll from for those still to come. ' +
      'A cursor or `after` older than EVENTS_RETENTION (default 30 days), whose next events may have been swept, is answered 410 (`cursor_expired`): read the lists again, then follow the events from the newest.',
    querystring: listQuerySchema(eventListFields, undefined, MAX_POSITION),
    headers: ReadHeaders,
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(Event))), 'One page of events'), 304: NotModified, ...errorResponses(400, 401, 403, 410) }
  },
  stream: {
    tags: [eventsTag.name],
    security: TOKEN_OR_KEY,
    operationId: 'events.stream',
    summary: 'Follow events as they commit (Server-Sent Events)',
    description: 'The events after `Last-Event-ID` (as a reconnecting `EventSource` sends it), else after `after` or `cursor`, else from now: first those already committed, then each as it commits, with the list\'s filters and permissions. Each event is a message whose `id` is the event\'s and whose `data` is the event as the list shows it. A message with an `id` and no `data` says where the stream stands when no event matched (it moves an EventSource\'s Last-Event-ID and fires no event); a comment line (`: heartbeat`) comes every EVENTS_HEARTBEAT (15 s). ' +
      'The stream ends after 5 minutes, or sooner as the access token expires or the instance shuts down: reconnect with `Last-Event-ID` (an `EventSource` does so by itself, after the `retry` the stream names), and nothing is missed or repeated; the caller is checked again at each reconnect (a revoked key or an ended session is refused). A stream held back so long that the events after it were swept ends too, and its reconnect is answered 410. A `Last-Event-ID` older than EVENTS_RETENTION is answered 410 (`cursor_expired`).',
    querystring: streamQuery,
    headers: Type.Object({
      'last-event-id': Type.Optional(Type.String({ pattern: '^(0|[1-9][0-9]{0,14})$', description: 'The id of the last event received: the stream begins after it' }))
    }),
    response: {
      200: {
        description: 'The stream: `text/event-stream`, one message an event (`id: 1042`, `data: {"id":1042,"type":"student.created",…}`)',
        content: { 'text/event-stream': { schema: Type.String() } }
      },
      ...errorResponses(400, 401, 403, 410)
    }
  }
}

export const eventSharedSchemas = [Event]
