import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { settledPosition } from '../../../../lib/db/settled-position.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import type { Filter } from '../../../../lib/http/list-query.js'
import { Event, eventListFields, eventSchemas, eventSharedSchemas, eventsTag } from './schema.js'

/** The filter that hides the events of resources the caller may not list; not a field a client sends. */
const HIDDEN = 'hidden resources'

/**
 * `/api/events`: the change feed, read from the change outbox (plugins/app/change-outbox.ts)
 * up to the settled position (lib/db/settled-position.ts), behind event-list.
 */
const events: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: eventsTag, schemas: eventSharedSchemas })
  const { knex } = fastify
  const columns = [
    'id',
    knex.raw('resource || \'.\' || action || \'d\' as type'),
    'resource',
    knex.raw('resource_id::float8 as resource_id'),
    knex.raw('at as occurred_at'),
    'request_id',
    'data',
    knex.raw('to_jsonb(changed) as changed')
  ]
  const feed = keysetTable(fastify.database, {
    name: 'events',
    rows: knex => knex('change_outbox'),
    columns,
    schema: Event,
    fields: eventListFields,
    settled: true,
    customFilters: {
      type: (qb, { value }) => qb.whereRaw('resource || \'.\' || action || \'d\' = any(?::text[])', [[value].flat().map(String)]),
      [HIDDEN]: (qb, { value }) => qb.whereRaw('resource <> all(?::text[])', [value])
    }
  })
  const settled = settledPosition(fastify.database)

  // A resource whose list needs a permission (`client-list`) shows its events to those who
  // hold it; one whose list needs none (students) to every caller. Permissions come with the
  // migrations only, so they are read once, at the first request.
  let guarded: Promise<string[]> | undefined
  const guardedResources = () => (guarded ??= knex('permissions').where('name', 'like', '%-list').pluck('name')
    .then(names => names.map(name => name.slice(0, -'-list'.length)), (error: unknown) => {
      guarded = undefined
      throw error
    }))

  const sweptThrough = async () => Number((await knex('swept_positions').where({ source: 'change_outbox' }).first('through'))?.through ?? 0)

  fastify.get('/', { schema: eventSchemas.index, onRequest: fastify.can('event-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, eventListFields)
    const after = list.after?.id ?? 0
    if (after > 0 && after < await sweptThrough()) {
      throw new CodedError('cursor_expired', `Events after ${after} may have been swept (EVENTS_RETENTION): read the lists again, then follow the events from the newest`)
    }
    const hidden = (await guardedResources()).filter(resource => !request.user.permissions.has(`${resource}-list`))
    const filters: Filter[] = hidden.length === 0 ? list.filters : [...list.filters, { field: HIDDEN, operator: 'in', value: hidden }]
    const through = await settled()
    const page = await feed.query({ ...list, filters }, through)
    // Once every event up to the settled position is shown, the next page starts there: a
    // consumer polls from it, and a filter that matched none there is not read again.
    page.next ??= { values: [], id: Math.max(through, after) }
    return fastify.lists.send(reply, list, page, { path: fastify.prefix, envelope: true })
  })
}

export default events
