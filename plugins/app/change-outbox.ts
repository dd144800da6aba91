import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import type { CteWrite, Insertion } from '../../lib/db/prepared-query.js'
import type { Scalar } from '../../lib/db/statement-query.js'
import type { Actor } from './audit.js'
import { sweepHourly } from '../../lib/db/hourly-sweep.js'
import { sqlName } from '../../lib/db/sql-name.js'

/** A change of a record, as its outbox row tells it. */
export interface OutboxChange {
  action: 'create' | 'update' | 'delete'
  resource: string
  id: number
  /** The record before the change: none for a create. */
  before?: object | null | undefined
  /** The record after it: none for a delete. */
  after?: object | null | undefined
  /** Fields whose values are secrets (a password): named among the changed fields, never kept. */
  secrets: readonly string[]
  /** Who acted, when not the request's caller: who registers. */
  actor?: Actor | undefined
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Writes the outbox row of a change in `db`, the change's own transaction. */
    outbox: (db: Knex, change: OutboxChange) => Promise<void>
    /** The outbox rows of the records one statement creates, to ride in it: a CTE `created` returns them. None when the outbox is off. */
    outboxedCreates: (resource: string) => CteWrite[]
    /** The insertion, with the outbox row of the record it creates written in its own statement. */
    outboxed: <Row, Args extends Scalar[]>(insertion: Insertion<Row, Args>, resource: string) => Insertion<Row, Args>
    /**
     * The outbox rows of the updates of one statement, to ride in it: a CTE `updated` holds each
     * record as changed (its version too), with `before_row`, the record before (jsonb); `fields`
     * are the record's, in their order. None when the outbox is off.
     */
    outboxedUpdates: (resource: string, fields: readonly string[]) => CteWrite[]
    /** Whether the request wrote an outbox row: its answer wakes the change feed's followers. */
    wroteEvents: boolean
  }
  interface FastifyInstance {
    /** Deletes the outbox rows past EVENTS_RETENTION, a batch at a time: how many went. */
    outboxSweep: () => Promise<number>
  }
}

/** What a row's data leaves out: the version is the database's (it tags the record). */
const LEFT_OUT = new Set(['version'])
/** Fields an update's `changed` never names: they change with every update. */
const ALWAYS_CHANGING = new Set(['updated_at', 'version'])

const CONTEXT_COLUMNS = ['request_id', 'actor_id', 'key_id']

type Fields = Record<string, unknown>

/** The record as a row's data: neither its version nor a secret. */
function data (record: Fields, secrets: readonly string[]): string {
  const kept = Object.fromEntries(Object.entries(record).filter(([name]) => !LEFT_OUT.has(name) && !secrets.includes(name)))
  return JSON.stringify(kept)
}

/** The fields an update changed, secrets named (their values are never kept). */
function changedNames (before: Fields, after: Fields, secrets: readonly string[]): string[] {
  const names = [...new Set([...Object.keys(before), ...Object.keys(after)])]
    .filter(name => !ALWAYS_CHANGING.has(name) && !secrets.includes(name) && JSON.stringify(before[name]) !== JSON.stringify(after[name]))
  return [...names, ...secrets]
}

// A created record, as its INSERT returned it, without its version.
// In the order of the records' ids (a statement writing many, as an import, may make them in
// another: its events still come in the order of the records).
const createdRow = (first: number) => `outboxed as (insert into change_outbox (resource, action, ${CONTEXT_COLUMNS.join(', ')}, resource_id, data)
  select $${first}, 'create', ${CONTEXT_COLUMNS.map((_, i) => `$${first + 1 + i}`).join(', ')}, created.id, to_jsonb(created) - 'version' from created order by created.id)`

// Each updated record, without its version or the record before, and the fields that changed
// (`changedNames` does the same for a change of one record). `fields` are the code's own names.
const updatedRows = (fields: readonly string[]) => (first: number) => `outboxed_updates as (insert into change_outbox (resource, action, ${CONTEXT_COLUMNS.join(', ')}, resource_id, data, changed)
  select $${first}, 'update', ${CONTEXT_COLUMNS.map((_, i) => `$${first + 1 + i}`).join(', ')}, updated.id, to_jsonb(updated) - '{version,before_row}'::text[],
    array(select name from unnest(array[${fields.map(field => `'${field}'`).join(', ')}]::text[]) with ordinality as field(name, n)
      where (updated.before_row -> name) is distinct from (to_jsonb(updated) -> name) order by n)
  from updated order by updated.id)`

const SWEEP_BATCH = 10_000
// By ctid: the sweep goes by time, which the table's one B-tree (its id) does not serve. The
// highest id swept is kept, so that a cursor below it is known to have missed rows.
const SWEEP = `with gone as (delete from change_outbox where ctid = any(array(
    select ctid from change_outbox where at < now() - make_interval(secs => $1) limit ${SWEEP_BATCH}))
    returning id),
  marked as (update swept_positions set through = greatest(through, (select max(id) from gone))
    where source = 'change_outbox' and exists (select 1 from gone))
  select count(*)::int as swept from gone`

/**
 * The change outbox (db/migrations/20261201000000_change_outbox.ts): every create, update and
 * delete of a record clients may follow writes one row, in the change's own transaction,
 * through the write path (plugins/app/write-path.ts). CHANGE_OUTBOX=off writes none.
 */
export default fp(async (fastify) => {
  const { enabled, retentionSeconds } = fastify.config.outbox

  function context (request: FastifyRequest, actor?: Actor): Scalar[] {
    const who = actor ?? request.user
    return [request.id, who?.id ?? null, who?.keyId ?? null]
  }

  fastify.decorateRequest('outbox', async function (this: FastifyRequest, db: Knex, change: OutboxChange) {
    if (!enabled) return
    const { secrets } = change
    const record = (change.after ?? change.before) as Fields
    const [requestId, actorId, keyId] = context(this, change.actor)
    this.wroteEvents = true
    await db('change_outbox').insert({
      resource: change.resource,
      resource_id: change.id,
      action: change.action,
      data: data(record, secrets),
      changed: change.action === 'update' ? changedNames(change.before as Fields, change.after as Fields, secrets) : null,
      request_id: requestId,
      actor_id: actorId,
      key_id: keyId
    })
  })

  fastify.decorateRequest('outboxedCreates', function (this: FastifyRequest, resource: string) {
    if (!enabled) return []
    this.wroteEvents = true
    return [{ name: 'outboxed', cte: createdRow, values: [resource, ...context(this)] }]
  })

  fastify.decorateRequest('outboxed', function <Row, Args extends Scalar[]> (this: FastifyRequest, insertion: Insertion<Row, Args>, resource: string) {
    if (!enabled) return insertion
    return { ...insertion, cteWrites: [...insertion.cteWrites, ...this.outboxedCreates(resource)] }
  })

  fastify.decorateRequest('outboxedUpdates', function (this: FastifyRequest, resource: string, fields: readonly string[]) {
    if (!enabled) return []
    const compared = fields.filter(field => !ALWAYS_CHANGING.has(field))
    compared.forEach(sqlName)
    this.wroteEvents = true
    return [{ name: `outboxed-updates(${compared.join(',')})`, cte: updatedRows(compared), values: [resource, ...context(this)] }]
  })

  // Answered, the change is committed (or rolled back, and a look finds nothing new).
  fastify.decorateRequest('wroteEvents', false)
  fastify.addHook('onResponse', (request, _reply, done) => {
    if (request.wroteEvents) fastify.changeFeed.committed()
    done()
  })

  fastify.decorate('outboxSweep', async () => {
    const { rows } = await fastify.pgPool.query<{ swept: number }>(SWEEP, [retentionSeconds])
    return rows[0]!.swept
  })
  sweepHourly(fastify, 'the change outbox', fastify.outboxSweep)
}, { name: 'change-outbox', dependencies: ['config', 'knex', 'change-feed'] })
