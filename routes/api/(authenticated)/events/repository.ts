import { eventType } from '../../../../lib/db/event-type.js'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { oncePerDatabase } from '../../../../lib/db/once-per-database.js'
import type { Database } from '../../../../lib/db/prepared-query.js'
import type { Filter } from '../../../../lib/http/list-query.js'
import { Event, eventListFields } from './schema.js'

/** The filter that hides the events of resources the caller may not list; not a field a client sends. */
const HIDDEN = 'hidden resources'

/** The events, read from the change outbox (plugins/app/change-outbox.ts). */
function createEventsRepository (database: Database) {
  const { knex } = database
  const feed = keysetTable(database, {
    name: 'events',
    rows: knex => knex('change_outbox'),
    columns: [
      'id',
      knex.raw(`${eventType()} as type`),
      'resource',
      knex.raw('resource_id::float8 as resource_id'),
      knex.raw('at as occurred_at'),
      'request_id',
      'data',
      knex.raw('to_jsonb(changed) as changed')
    ],
    schema: Event,
    fields: eventListFields,
    idType: 'bigint',
    settled: true,
    customFilters: {
      type: (qb, { value }) => qb.whereRaw(`${eventType()} = any(?::text[])`, [[value].flat().map(String)]),
      [HIDDEN]: (qb, { value }) => qb.whereRaw('resource <> all(?::text[])', [value])
    }
  })

  return {
    /** One page of events up to the settled position `through`. */
    page: feed.query,

    /**
     * The resources whose events a caller may not see: those whose list needs a permission
     * (`client-list`) it lacks. A resource whose list needs none (students) shows its events to
     * every caller.
     */
    async guardedResources (): Promise<string[]> {
      return (await knex('permissions').where('name', 'like', '%-list').pluck('name')).map(name => name.slice(0, -'-list'.length))
    },

    /** The filters asked for, and one that leaves out the resources hidden from the caller. */
    visibleTo (hidden: string[], filters: Filter[]): Filter[] {
      return hidden.length === 0 ? filters : [...filters, { field: HIDDEN, operator: 'in', value: hidden }]
    },

    /**
     * Where a filtered read of the events after `after` stops: at `through`, or sooner, at the
     * `rows`-th event after `after`, so that a filter matching few reads no more than that many
     * a page; the next page goes on from there.
     */
    async scanBound (after: number, through: number, rows: number): Promise<number> {
      const { rows: [bound] } = await database.pool.query<{ id: number }>(
        'select id::float8 as id from change_outbox where id > $1 and id <= $2 order by id offset $3 limit 1', [after, through, rows - 1])
      return bound?.id ?? through
    },

    /**
     * Where the events stand at `through`, in one statement: the id of the last event at or
     * before it (0 if none), and the highest position the retention sweep deleted (a reader
     * after an earlier one may have missed events).
     */
    async standing (through: number): Promise<{ lastId: number, swept: number }> {
      const { rows } = await database.pool.query<{ lastId: number, swept: number }>(`select
          (select coalesce(max(id), 0) from change_outbox where id <= $1)::float8 as "lastId",
          (select through from swept_positions where source = 'change_outbox')::float8 as swept`, [through])
      return rows[0]!
    }
  }
}

export const eventsRepository = oncePerDatabase(createEventsRepository)
