import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import type { CteWrite, Insertion } from '../../lib/db/prepared-query.js'
import type { Versioned } from '../../lib/db/row-versions.js'
import type { Scalar } from '../../lib/db/statement-query.js'
import { versionTag } from '../../lib/http/entity-tags.js'
import type { Actor, AuditAction, Change, StatementActor, StatementEvent } from './audit.js'
import type { OutboxChange } from './change-outbox.js'
import { sendCreated, type Created } from './idempotency.js'

/** A resource's records, as the write path reaches them: one declaration per route folder. */
export interface RecordKind<Row> {
  /** The resource, as the audit log and the change outbox name it: `student`. */
  resource: string
  /** The record as it stands, locked until `trx` ends (SELECT … FOR UPDATE, or FOR NO KEY UPDATE); none if there is none. */
  lock: (id: number, trx: Knex) => Promise<Row | undefined>
  /**
   * The record's ETag, read in the write's transaction (a tag of more than the record: the
   * profile's); by default its version's (a record of one table: `versionTag`). `false`: it has
   * none (API keys, sessions), and its writes take no If-Match and answer no ETag.
   */
  tag?: ((row: Row, trx: Knex) => string | Promise<string>) | false
  /** The error of a record that is not there (404). */
  notFound: (id: number) => Error
  /** Whether clients follow it through the change outbox (default); sessions and keys are audited only. */
  followed?: boolean
}

/** What a create needs of a kind: no lock, no record to find. */
export type CreatedKind<Row> = Pick<RecordKind<Row>, 'resource' | 'tag' | 'followed'>

/** A kind clients follow: the only ones made by one INSERT (`insertRecord`) so far. */
export type FollowedKind<Row> = RecordKind<Row> & { followed?: true }

/** What one write says beyond its domain step. */
export interface WriteOptions {
  /** Fields whose values are secrets (a password it sets): recorded as changed, never their values. */
  secrets?: readonly string[]
  /** The audit entry's action, when not the write's own (create, update, delete): a key's `revoke`, a session's `end`. */
  action?: AuditAction
  /** What the audit entry tells after an event that changes no field a client reads (a session's end: whose, and why), in place of the record. */
  event?: object
  /** Who acted, when not the request's caller, once the domain step has run: who registers acts as themselves, in the session they start. */
  actor?: () => Actor
  /** `false`: a create's Idempotency-Key is neither kept nor replayed, as its answer holds a secret that is never stored (an API key's). */
  replayed?: boolean
}

/** The domain step of an update: the change itself, in `trx`, returning the record as changed. */
export type UpdateStep<Row> = (trx: Knex, before: Row) => Promise<Row>
/** The domain step of a delete: the removal itself, in `trx`. */
export type RemovalStep<Row> = (trx: Knex, before: Row) => Promise<unknown>
/** The domain step of a create: the record made, in `trx`. */
export type CreationStep<Row> = (trx: Knex) => Promise<Row & { id: number }>
/**
 * The domain step of an account's event of several statements (a logout, a session ended by
 * a spent token presented again), in `trx`: what it answers, and the audit entries of what it
 * did (none if it did nothing).
 */
export type EventStep<Result> = (trx: Knex) => Promise<{ result: Result, events: readonly Change[] }>

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * A create of one INSERT (`insertion`): its audit entry and outbox row ride in its own
     * statement, as does its Idempotency-Key; answered 201 with Location and ETag.
     */
    insertRecord: <Row extends { id: number }, Args extends Scalar[]>(reply: FastifyReply, kind: FollowedKind<Row>, insertion: Insertion<Versioned<Row>, Args>, answer: (row: Versioned<Row>) => Omit<Created, 'etag'>) => Promise<FastifyReply>
    /**
     * A create of several statements, in one transaction with its audit entry, outbox row and
     * Idempotency-Key; answered 201 with `answer`'s body and Location, and the record's ETag.
     */
    createRecord: <Row>(reply: FastifyReply, kind: CreatedKind<Row>, create: CreationStep<Row>, answer: (row: Row & { id: number }) => Omit<Created, 'etag'>, options?: WriteOptions) => Promise<FastifyReply>
    /** An update of record `id` under If-Match: the record as changed, its ETag on `reply`. */
    updateRecord: <Row>(reply: FastifyReply, kind: RecordKind<Row>, id: number, change: UpdateStep<Row>, options?: WriteOptions) => Promise<Row>
    /** A delete of record `id` under If-Match: the record as it was. */
    deleteRecord: <Row>(kind: RecordKind<Row>, id: number, remove: RemovalStep<Row>, options?: WriteOptions) => Promise<Row>
    /**
     * An event of an account, which changes no record clients follow nor one a tag guards: its
     * step and its audit entries in one transaction, under the write guard. `step`'s result.
     */
    recordEvents: <Result>(step: EventStep<Result>) => Promise<Result>
    /**
     * An event of an account that is one statement (a login): the audit entries of `events`
     * ride in it, under the write guard. `run` runs the statement with the CTE writes given.
     */
    recordStatementEvents: <Result>(events: readonly StatementEvent[], actor: StatementActor, run: (cteWrites: CteWrite[]) => Promise<Result>) => Promise<Result>
  }
}

/**
 * The write path: every change of every record goes this way, so that what each write owes
 * is written once, in this order: the write guard and time limit (`guardWrite`); one
 * transaction; the record before, under its lock; `If-Match` against it (412 with the current
 * tag; 428 under REQUIRE_IF_MATCH); the handler's domain step, and only that; the audit entry;
 * the change outbox row; then, for a create with an Idempotency-Key, the kept answer; the ETag
 * and Location. A handler says what it writes and does its domain step. An account's event
 * (a logout) takes the guard, the transaction and the audit entries (`recordEvents`); one of a
 * single statement (a login), the guard and the entries riding in it (`recordStatementEvents`).
 */
export default fp(async (fastify) => {
  const { knex } = fastify

  /** The audit entry and the outbox row of a change, in its transaction. */
  async function record (request: FastifyRequest, trx: Knex, kind: Pick<RecordKind<unknown>, 'resource' | 'followed'>, change: Omit<OutboxChange, 'resource' | 'secrets' | 'actor'>, options: WriteOptions) {
    const told = { ...change, resource: kind.resource, secrets: options.secrets ?? [], actor: options.actor?.() }
    const audited = options.event === undefined ? told : { ...told, before: undefined, after: options.event }
    await request.audit(trx, { ...audited, action: options.action ?? change.action })
    if (kind.followed !== false) await request.outbox(trx, told)
  }

  /** The record's ETag, in the write's transaction: none for a kind without tags. */
  const tagOf = async <Row>(kind: CreatedKind<Row>, row: Row, trx: Knex): Promise<string | undefined> => {
    if (kind.tag === false) return undefined
    return kind.tag ? kind.tag(row, trx) : versionTag((row as Versioned<object>).version)
  }

  /** Runs `work` in a transaction: `db`'s own if it is one (an Idempotency-Key's), else a new one. */
  const inTransaction = <T>(db: Knex, work: (trx: Knex) => Promise<T>): Promise<T> =>
    db.isTransaction ? work(db) : db.transaction(work)

  fastify.decorateRequest('insertRecord', function <Row extends { id: number }, Args extends Scalar[]> (this: FastifyRequest, reply: FastifyReply, kind: FollowedKind<Row>, insertion: Insertion<Versioned<Row>, Args>, answer: (row: Versioned<Row>) => Omit<Created, 'etag'>) {
    const recorded = this.outboxed(this.audited(insertion, kind.resource), kind.resource)
    return this.insertOnce(reply, recorded, row => ({ ...answer(row), etag: versionTag(row.version) }))
  })

  fastify.decorateRequest('createRecord', async function <Row> (this: FastifyRequest, reply: FastifyReply, kind: CreatedKind<Row>, create: CreationStep<Row>, answer: (row: Row & { id: number }) => Omit<Created, 'etag'>, options: WriteOptions = {}) {
    const created = (db: Knex) => inTransaction(db, async trx => {
      const row = await create(trx)
      await record(this, trx, kind, { action: 'create', id: row.id, after: row as object }, options)
      return { ...answer(row), etag: await tagOf(kind, row, trx) }
    })
    if (options.replayed === false) return sendCreated(reply, await this.guardWrite(() => created(knex)))
    return this.createOnce(reply, created)
  })

  /** The If-Match of a write of `kind`: none for a kind without tags. */
  const ifMatchOf = <Row>(request: FastifyRequest, kind: RecordKind<Row>) => kind.tag === false ? undefined : request.ifMatch()

  /** The record under its lock, once If-Match holds for it. */
  async function locked<Row> (request: FastifyRequest, trx: Knex, kind: RecordKind<Row>, id: number, tags: ReturnType<FastifyRequest['ifMatch']>) {
    const before = await kind.lock(id, trx)
    if (before === undefined) throw kind.notFound(id)
    // The tag is read only to be checked: a profile's costs a statement.
    if (tags !== undefined) request.checkIfMatch(tags, (await tagOf(kind, before, trx))!)
    return before
  }

  fastify.decorateRequest('updateRecord', async function <Row> (this: FastifyRequest, reply: FastifyReply, kind: RecordKind<Row>, id: number, change: UpdateStep<Row>, options: WriteOptions = {}) {
    const tags = ifMatchOf(this, kind)
    const { after, etag } = await this.guardWrite(() => knex.transaction(async trx => {
      const before = await locked(this, trx, kind, id, tags)
      const after = await change(trx, before)
      await record(this, trx, kind, { action: 'update', id, before: before as object, after: after as object }, options)
      return { after, etag: await tagOf(kind, after, trx) }
    }))
    if (etag !== undefined) reply.header('etag', etag)
    return after
  })

  fastify.decorateRequest('deleteRecord', async function <Row> (this: FastifyRequest, kind: RecordKind<Row>, id: number, remove: RemovalStep<Row>, options: WriteOptions = {}) {
    const tags = ifMatchOf(this, kind)
    return this.guardWrite(() => knex.transaction(async trx => {
      const before = await locked(this, trx, kind, id, tags)
      await remove(trx, before)
      await record(this, trx, kind, { action: 'delete', id, before: before as object }, options)
      return before
    }))
  })

  fastify.decorateRequest('recordEvents', function <Result> (this: FastifyRequest, step: EventStep<Result>) {
    return this.guardWrite(() => knex.transaction(async trx => {
      const { result, events } = await step(trx)
      for (const event of events) await this.audit(trx, event)
      return result
    }))
  })

  fastify.decorateRequest('recordStatementEvents', function <Result> (this: FastifyRequest, events: readonly StatementEvent[], actor: StatementActor, run: (cteWrites: CteWrite[]) => Promise<Result>) {
    return this.guardWrite(() => run(this.auditedEvents(events, actor)))
  })
}, { name: 'write-path', dependencies: ['knex', 'audit', 'change-outbox', 'idempotency', 'conditional-requests', 'request-timing'] })
