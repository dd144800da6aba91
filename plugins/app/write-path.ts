import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import type { Insertion } from '../../lib/db/prepared-query.js'
import type { Versioned } from '../../lib/db/row-versions.js'
import type { Scalar } from '../../lib/db/statement-query.js'
import { versionTag } from '../../lib/http/entity-tags.js'
import type { OutboxChange } from './change-outbox.js'
import type { Created } from './idempotency.js'

/** A resource's records, as the write path reaches them: one declaration per route folder. */
export interface RecordKind<Row> {
  /** The resource, as the audit log and the change outbox name it: `student`. */
  resource: string
  /** The record as it stands, locked until `trx` ends (SELECT … FOR UPDATE); none if there is none. */
  lock: (id: number, trx: Knex) => Promise<Row | undefined>
  /** The record's ETag; by default its version's (a record of one table: `versionTag`). */
  tag?: (row: Row) => string
  /** The error of a record that is not there (404). */
  notFound: (id: number) => Error
  /** Whether clients follow it through the change outbox (default); sessions and keys are audited only. */
  followed?: boolean
}

/** What one write says beyond its domain step. */
export interface WriteOptions {
  /** Fields whose values are secrets (a password it sets): recorded as changed, never their values. */
  secrets?: readonly string[]
}

/** The domain step of an update: the change itself, in `trx`, returning the record as changed. */
export type UpdateStep<Row> = (trx: Knex, before: Row) => Promise<Row>
/** The domain step of a delete: the removal itself, in `trx`. */
export type RemovalStep<Row> = (trx: Knex, before: Row) => Promise<unknown>
/** The domain step of a create: the record made, in `trx`. */
export type CreationStep<Row> = (trx: Knex) => Promise<Row & { id: number }>

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * A create of one INSERT (`insertion`): its audit entry and outbox row ride in its own
     * statement, as does its Idempotency-Key; answered 201 with Location and ETag.
     */
    insertRecord: <Row extends { id: number }, Args extends Scalar[]>(reply: FastifyReply, kind: RecordKind<Row>, insertion: Insertion<Versioned<Row>, Args>, answer: (row: Versioned<Row>) => Omit<Created, 'etag'>) => Promise<FastifyReply>
    /**
     * A create of several statements, in one transaction with its audit entry, outbox row and
     * Idempotency-Key; answered 201 with `answer`'s body and Location, and the record's ETag.
     */
    createRecord: <Row>(reply: FastifyReply, kind: RecordKind<Row>, create: CreationStep<Row>, answer: (row: Row & { id: number }) => Omit<Created, 'etag'>, options?: WriteOptions) => Promise<FastifyReply>
    /** An update of record `id` under If-Match: the record as changed, its ETag on `reply`. */
    updateRecord: <Row>(reply: FastifyReply, kind: RecordKind<Row>, id: number, change: UpdateStep<Row>, options?: WriteOptions) => Promise<Row>
    /** A delete of record `id` under If-Match: the record as it was. */
    deleteRecord: <Row>(kind: RecordKind<Row>, id: number, remove: RemovalStep<Row>, options?: WriteOptions) => Promise<Row>
  }
}

/**
 * The write path: every change of every record goes this way, so that what each write owes
 * is written once, in this order: the write guard and time limit (`guardWrite`); one
 * transaction; the record before, under its lock; `If-Match` against it (412 with the current
 * tag; 428 under REQUIRE_IF_MATCH); the handler's domain step, and only that; the audit entry;
 * the change outbox row; then, for a create with an Idempotency-Key, the kept answer; the ETag
 * and Location. A handler says what it writes and does its domain step.
 */
export default fp(async (fastify) => {
  const { knex } = fastify

  /** The audit entry and the outbox row of a change, in its transaction. */
  async function record (request: FastifyRequest, trx: Knex, kind: Pick<RecordKind<unknown>, 'resource' | 'followed'>, change: Omit<OutboxChange, 'resource'>) {
    const told = { ...change, resource: kind.resource }
    await request.audit(trx, told)
    if (kind.followed !== false) await request.outbox(trx, told)
  }

  const tagOf = <Row>(kind: RecordKind<Row>, row: Row) => kind.tag ? kind.tag(row) : versionTag((row as Versioned<object>).version)

  /** Runs `work` in a transaction: `db`'s own if it is one (an Idempotency-Key's), else a new one. */
  const inTransaction = <T>(db: Knex, work: (trx: Knex) => Promise<T>): Promise<T> =>
    db.isTransaction ? work(db) : db.transaction(work)

  fastify.decorateRequest('insertRecord', function <Row extends { id: number }, Args extends Scalar[]> (this: FastifyRequest, reply: FastifyReply, kind: RecordKind<Row>, insertion: Insertion<Versioned<Row>, Args>, answer: (row: Versioned<Row>) => Omit<Created, 'etag'>) {
    const audited = this.audited(insertion, kind.resource)
    const recorded = kind.followed === false ? audited : this.outboxed(audited, kind.resource)
    return this.insertOnce(reply, recorded, row => ({ ...answer(row), etag: versionTag(row.version) }))
  })

  fastify.decorateRequest('createRecord', function <Row> (this: FastifyRequest, reply: FastifyReply, kind: RecordKind<Row>, create: CreationStep<Row>, answer: (row: Row & { id: number }) => Omit<Created, 'etag'>, options: WriteOptions = {}) {
    return this.createOnce(reply, db => inTransaction(db, async trx => {
      const row = await create(trx)
      await record(this, trx, kind, { action: 'create', id: row.id, after: row as object, secrets: options.secrets })
      return { ...answer(row), etag: tagOf(kind, row) }
    }))
  })

  /** The record under its lock, once If-Match holds for it. */
  async function locked<Row> (request: FastifyRequest, trx: Knex, kind: RecordKind<Row>, id: number, tags: ReturnType<FastifyRequest['ifMatch']>) {
    const before = await kind.lock(id, trx)
    if (before === undefined) throw kind.notFound(id)
    request.checkIfMatch(tags, tagOf(kind, before))
    return before
  }

  fastify.decorateRequest('updateRecord', async function <Row> (this: FastifyRequest, reply: FastifyReply, kind: RecordKind<Row>, id: number, change: UpdateStep<Row>, options: WriteOptions = {}) {
    const tags = this.ifMatch()
    const after = await this.guardWrite(() => knex.transaction(async trx => {
      const before = await locked(this, trx, kind, id, tags)
      const after = await change(trx, before)
      await record(this, trx, kind, { action: 'update', id, before: before as object, after: after as object, secrets: options.secrets })
      return after
    }))
    reply.header('etag', tagOf(kind, after))
    return after
  })

  fastify.decorateRequest('deleteRecord', async function <Row> (this: FastifyRequest, kind: RecordKind<Row>, id: number, remove: RemovalStep<Row>, options: WriteOptions = {}) {
    const tags = this.ifMatch()
    return this.guardWrite(() => knex.transaction(async trx => {
      const before = await locked(this, trx, kind, id, tags)
      await remove(trx, before)
      await record(this, trx, kind, { action: 'delete', id, before: before as object, secrets: options.secrets })
      return before
    }))
  })
}, { name: 'write-path', dependencies: ['knex', 'audit', 'change-outbox', 'idempotency', 'conditional-requests', 'request-timing'] })
