import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { jsonText } from '../../lib/db/json-text.js'
import { changedFields, LEFT_OUT } from '../../lib/audit/changed-fields.js'
import type { CteWrite, Insertion } from '../../lib/db/prepared-query.js'
import type { Scalar } from '../../lib/db/statement-query.js'
import { sweepHourly } from '../../lib/db/hourly-sweep.js'
import { sqlName } from '../../lib/db/sql-name.js'

/**
 * What changed: the resource as the write path names it (`student`, `client`, `key`,
 * `session`, …; a resource added names its own), and what was done to it.
 */
export type AuditResource = string
export const AUDIT_ACTIONS = ['create', 'update', 'delete', 'revoke', 'login', 'login-failed', 'logout', 'end', 'refresh-reuse', 'retry', 'disable', 'reset-request', 'reset-password', 'verify-request', 'verify-email', 'mfa-start', 'mfa-enable', 'mfa-disable', 'mfa-recovery-codes', 'mfa-challenge', 'passkey-add', 'passkey-remove', 'reauthenticate'] as const
export type AuditAction = typeof AUDIT_ACTIONS[number]

/** Who acted: a user, through an API key or a session; none for a caller without a token. */
export interface Actor {
  id: number | null
  keyId?: number | undefined
  sessionId?: number | undefined
}

/** One change, as an audit entry tells it (lib/audit/changed-fields.ts keeps what changed). */
export interface Change {
  action: AuditAction
  resource: AuditResource
  id: number | null
  /** The record before the change: none for a create. */
  before?: object | null | undefined
  /** The record after it: none for a delete. */
  after?: object | null | undefined
  /** Fields whose values are secrets (a password): the entry tells they changed, never their values. */
  secrets?: readonly string[]
  /** Who acted, when not the request's caller: the user who registers, in the session they start. */
  actor?: Actor
}

/**
 * An event whose audit entry rides in the statement that does it (`request.auditedEvents`):
 * the record it is of is named by a column of the statement's row, `created`.
 */
export interface StatementEvent {
  action: AuditAction
  resource: AuditResource
  /** The column of `created` holding the record's id; `each`: holding an array of ids, an entry for each. */
  idColumn: string
  each?: boolean
  after: object
}

/** Who acted in such an event: a user, in the session a column of `created` holds (the one a login starts). */
export interface StatementActor {
  userId: number
  sessionColumn: string
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Writes the audit entry of a change in `db`, the change's own transaction: the entry
     * commits with the change, or neither does. Who, from where and which request are the
     * request's.
     */
    audit: (db: Knex, change: Change) => Promise<void>
    /** The audit entries of the records one statement creates, to ride in it: a CTE `created` returns them. None when the log is off. */
    auditedCreates: (resource: AuditResource) => CteWrite[]
    /** The insertion, with the audit entry of the record it creates written in its own statement. */
    audited: <Row, Args extends Scalar[]>(insertion: Insertion<Row, Args>, resource: AuditResource) => Insertion<Row, Args>
    /**
     * The audit entries of the updates of one statement, to ride in it: a CTE `updated` holds
     * each record as changed, with `before_row`, the record before (jsonb); `fields` are those
     * an entry may show, in their order. None when the log is off.
     */
    auditedUpdates: (resource: AuditResource, fields: readonly string[]) => CteWrite[]
    /** The audit entries of events done by one statement, to ride in it: none when the log is off. */
    auditedEvents: (events: readonly StatementEvent[], actor: StatementActor) => CteWrite[]
  }
  interface FastifyInstance {
    /** Deletes the entries past AUDIT_RETENTION, a batch at a time: how many went. */
    auditSweep: () => Promise<number>
  }
}

/** The columns of an entry's who, from where and what, in this order. */
const CONTEXT_COLUMNS = ['actor_id', 'key_id', 'session_id', 'ip', 'request_id', 'action', 'resource']

// A created record, as its INSERT returned it, without what an entry leaves out
// (lib/audit/changed-fields.ts).
const createdEntry = (first: number) => `audited as (insert into audit_log (${CONTEXT_COLUMNS.join(', ')}, resource_id, after)
  select ${CONTEXT_COLUMNS.map((_, i) => `$${first + i}`).join(', ')}, created.id, to_jsonb(created) - '{created_at,updated_at,version}'::text[] from created)`

// Each updated record's changed fields, as they were and as they became (lib/audit/changed-fields.ts
// does the same for a change of one record). `fields` are the code's own names.
const updatedEntries = (fields: readonly string[]) => (first: number) => `audited_updates as (insert into audit_log (${CONTEXT_COLUMNS.join(', ')}, resource_id, before, after)
  select ${CONTEXT_COLUMNS.map((_, i) => `$${first + i}`).join(', ')}, updated.id, changes.before, changes.after
  from updated, lateral (select coalesce(jsonb_object_agg(name, updated.before_row -> name), '{}') as before,
      coalesce(jsonb_object_agg(name, to_jsonb(updated) -> name), '{}') as after
    from unnest(array[${fields.map(field => `'${field}'`).join(', ')}]::text[]) as name
    where (updated.before_row -> name) is distinct from (to_jsonb(updated) -> name)) as changes)`

/** The client's address, as an entry keeps it. */
function ipOf (request: FastifyRequest): string | null {
  // Node forgets a socket's address once it closes: a client gone mid-request leaves none.
  /* c8 ignore next */
  return (request.ip as string | undefined) === undefined ? null : request.ip.slice(0, 64)
}

/** A column of `created` named in an entry's SQL: the code's own names, never a caller's. */
const column = (name: string) => `created.${sqlName(name)}`

// The entries of events, each a SELECT from `created` (unnesting an array of ids for `each`):
// the actor, their session, the IP and the request first, then each event's action, resource
// and record after it. Casts, as a UNION leaves parameters without a type.
const eventEntries = (events: readonly StatementEvent[], actor: StatementActor) => (first: number) => {
  const shared = `$${first}::bigint, null::bigint, ${column(actor.sessionColumn)}::bigint, $${first + 1}::varchar, $${first + 2}::varchar`
  const selects = events.map((event, i) => {
    const at = first + 3 + i * 3
    const what = `$${at}::varchar, $${at + 1}::varchar`
    return event.each === true
      ? `select ${shared}, ${what}, record_id::bigint, $${at + 2}::jsonb from created, unnest(${column(event.idColumn)}) as record_id`
      : `select ${shared}, ${what}, ${column(event.idColumn)}::bigint, $${at + 2}::jsonb from created`
  })
  return `audited_events as (insert into audit_log (${CONTEXT_COLUMNS.join(', ')}, resource_id, after)
  ${selects.join('\n  union all ')})`
}

const SWEEP_BATCH = 10_000
// The trigger of the audit log refuses every DELETE but of entries older than the time the
// sweep's own transaction names.
const SWEEP = `with retention as (select set_config('audit.sweep_before', (now() - make_interval(secs => $1))::text, true) as before)
  delete from audit_log where id = any(array(
    select id from audit_log where at < (select before::timestamptz from retention) order by at limit ${SWEEP_BATCH}))`

/**
 * The audit log (db/migrations/20261129000000_audit_log.ts): every change to users, roles,
 * clients, API keys and sessions writes one entry, in the change's own transaction, through
 * `request.audit` or, for a create of one INSERT, `request.audited`, or, for events of one
 * statement (a login), `request.auditedEvents`. AUDIT_LOG=off writes none.
 */
export default fp(async (fastify) => {
  const { enabled, retentionSeconds } = fastify.config.audit

  /** Who acted, from where, and what was done, as the entry's first columns hold them. */
  function context (request: FastifyRequest, action: AuditAction, resource: AuditResource, actor?: Actor): Scalar[] {
    const who = actor ?? (request.user ? { id: request.user.id, keyId: request.user.keyId, sessionId: request.user.sessionId } : { id: null })
    return [who.id, who.keyId ?? null, who.sessionId ?? null, ipOf(request), request.id, action, resource]
  }

  fastify.decorateRequest('audit', async function (this: FastifyRequest, db: Knex, change: Change) {
    if (!enabled) return
    const values = context(this, change.action, change.resource, change.actor)
    type Fields = Record<string, unknown>
    const { before, after } = changedFields((change.before ?? null) as Fields | null, (change.after ?? null) as Fields | null, change.secrets)
    await db('audit_log').insert({
      ...Object.fromEntries(CONTEXT_COLUMNS.map((column, i) => [column, values[i]])),
      resource_id: change.id,
      // As JSON text: pg would send an array as PostgreSQL's own.
      before: before && jsonText(before),
      after: after && jsonText(after)
    })
  })

  fastify.decorateRequest('auditedCreates', function (this: FastifyRequest, resource: AuditResource) {
    if (!enabled) return []
    return [{ name: 'audited', cte: createdEntry, values: context(this, 'create', resource) }]
  })

  fastify.decorateRequest('audited', function <Row, Args extends Scalar[]> (this: FastifyRequest, insertion: Insertion<Row, Args>, resource: AuditResource) {
    if (!enabled) return insertion
    return { ...insertion, cteWrites: [...insertion.cteWrites, ...this.auditedCreates(resource)] }
  })

  fastify.decorateRequest('auditedUpdates', function (this: FastifyRequest, resource: AuditResource, fields: readonly string[]) {
    if (!enabled) return []
    const shown = fields.filter(field => !LEFT_OUT.has(field))
    shown.forEach(column)
    return [{ name: `audited-updates(${shown.join(',')})`, cte: updatedEntries(shown), values: context(this, 'update', resource) }]
  })

  fastify.decorateRequest('auditedEvents', function (this: FastifyRequest, events: readonly StatementEvent[], actor: StatementActor) {
    if (!enabled) return []
    const values: Scalar[] = [actor.userId, ipOf(this), this.id]
    for (const event of events) values.push(event.action, event.resource, jsonText(changedFields(null, event.after as Record<string, unknown>).after))
    const shape = events.map(event => `${event.each === true ? '*' : ''}${event.idColumn}`).join(',')
    return [{ name: `audited-events(${shape}; ${actor.sessionColumn})`, cte: eventEntries(events, actor), values }]
  })

  fastify.decorate('auditSweep', async () => {
    const { rowCount } = await fastify.pgPool.query(SWEEP, [retentionSeconds])
    // A DELETE always tells how many rows it took (pg's type allows null for commands that do not).
    return rowCount!
  })
  sweepHourly(fastify, 'the audit log', fastify.auditSweep)
}, { name: 'audit', dependencies: ['config', 'knex'] })
