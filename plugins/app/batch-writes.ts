import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import type { Knex } from 'knex'
import { isUniqueViolation } from '../../lib/db/db-errors.js'
import { retriedOnDeadlock } from '../../lib/db/deadlock-retry.js'
import { rowUnits } from '../../lib/limits/costs.js'
import { insertAll, type Insertion } from '../../lib/db/prepared-query.js'
import type { Versioned } from '../../lib/db/row-versions.js'
import { versionTag } from '../../lib/http/entity-tags.js'
import type { CodedError, ErrorCode } from '../../lib/http/error-codes.js'
import { InvalidRows } from '../../lib/http/invalid-fields.js'
import { invalidRows } from '../../lib/http/validation.js'
import { fieldErrors } from './errors.js'

/** How a batch is written: all its rows or none (`atomic`, the default), or each on its own (`per_row`). */
export type BatchMode = 'atomic' | 'per_row'

/**
 * A unique field of a kind's records (a student's e-mail address): a row that would repeat a
 * value taken, by a record or by an earlier row of the batch, is refused. The INSERT skips a
 * row whose value a record holds (lib/db/batch-insert.ts), and the batch tells it.
 */
export interface UniqueField<Input> {
  field: keyof Input & string
  /** The value as the unique index compares it (`lower(email)`). */
  key: (value: string) => string
  /** The error of a row whose value is taken. */
  takenError: (value: string) => CodedError
}

/** What the batch writes need of a kind. */
export interface BatchKind<Row, Input> {
  resource: string
  /**
   * One INSERT … SELECT of these rows, in their order, returning each it made
   * (lib/db/batch-insert.ts); with `unique`, skipping a row whose value a record holds, or,
   * `skipTaken` false, failing whole on it.
   */
  insertion: (rows: readonly Input[], skipTaken?: boolean) => Insertion<Versioned<Row & { id: number }>, [rows: string]>
  unique?: UniqueField<Input>
}

/** One row's outcome in a batch's answer: the record made, or why not. */
export interface RowOutcome {
  index: number
  status: number
  id?: number
  etag?: string
  error?: { code: ErrorCode, message: string, data: Record<string, string[]> }
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Creates a batch of records (`rows`: the body of a route whose schema is a `BatchBody`),
     * each as `insertRecord` would, its audit entry and outbox row included, in one INSERT (in
     * a transaction with an Idempotency-Key, or to name the rows an atomic batch refuses);
     * answers 200 with `answer`'s body around each row's outcome, in order. An
     * atomic batch with a row refused (by its schema, or a unique value taken) writes none: 422
     * naming each by index. One Idempotency-Key covers the batch.
     */
    insertRecords: <Row, Input>(reply: FastifyReply, kind: BatchKind<Row, Input>, rows: readonly unknown[], mode: BatchMode | undefined, answer: (outcomes: RowOutcome[]) => unknown) => Promise<FastifyReply>
  }
}

/** Why a row was not written: its outcome's status and error, and its fields named by its index for an atomic batch's 422. */
interface RowRefusal {
  status: number
  error: Required<RowOutcome>['error']
  indexed: Record<string, string[]>
}

const problems = (data: Record<string, string[]>) => Object.entries(data).map(([field, told]) => `${field} ${told.join(', ')}`).join('; ')

/** The rows of a batch that its schema refused (lib/http/validation.ts), by index. */
function refusedBySchema (rows: readonly unknown[]): Map<number, RowRefusal> {
  const refused = new Map<number, RowRefusal>()
  for (const [index, errors] of invalidRows(rows)) {
    const data = fieldErrors(errors, 'row')
    // Within the body: a row that is no object is named by its index alone, a field as `3.email`.
    const indexed = fieldErrors(errors.map((error): FastifySchemaValidationError => ({ ...error, instancePath: `/${index}${error.instancePath}` })), 'body')
    refused.set(index, { status: 400, error: { code: 'invalid_body', message: `Invalid row: ${problems(data)}`, data }, indexed })
  }
  return refused
}

/** An atomic batch's 422: each refused row's fields, named by index. */
function refusedAll (refused: ReadonlyMap<number, RowRefusal>, rows: number): InvalidRows {
  const data: Record<string, string[]> = {}
  for (const [, { indexed }] of [...refused].sort(([a], [b]) => a - b)) Object.assign(data, indexed)
  return new InvalidRows(data, refused.size, rows)
}

const uniqueValue = <Input>(unique: UniqueField<Input>, row: unknown) => (row as Record<string, string>)[unique.field]!
const uniqueKey = <Input>(unique: UniqueField<Input>, row: unknown) => unique.key(uniqueValue(unique, row))

/** The refusal of row `index`, whose unique value is taken (`holder`: by that earlier row of the batch). */
function takenRefusal<Input> (unique: UniqueField<Input>, row: unknown, index: number, holder?: number): RowRefusal {
  const error = unique.takenError(uniqueValue(unique, row))
  const message = holder === undefined ? error.message : `${error.message} (row ${holder} of this batch has it)`
  return { status: error.statusCode, error: { code: error.errorCode, message, data: { [unique.field]: [message] } }, indexed: { [`${index}.${unique.field}`]: [message] } }
}

/** The rows of `writing` whose unique value an earlier row of the batch holds, by index. */
function repeatedValues<Input> (unique: UniqueField<Input>, rows: readonly unknown[], writing: number[]): Map<number, RowRefusal> {
  const refused = new Map<number, RowRefusal>()
  const first = new Map<string, number>()
  for (const index of writing) {
    const key = uniqueKey(unique, rows[index])
    const holder = first.get(key)
    if (holder === undefined) first.set(key, index)
    else refused.set(index, takenRefusal(unique, rows[index], index, holder))
  }
  return refused
}

/**
 * Batches of creates, on the write path's road (plugins/app/write-path.ts): the write guard and
 * time limit and the Idempotency-Key (`createOnce`), the rows' checks against the batch, then
 * one INSERT whose audit entries and outbox rows ride in its own statement.
 */
export default fp(async (fastify) => {
  fastify.decorateRequest('insertRecords', async function <Row, Input> (this: FastifyRequest, reply: FastifyReply, kind: BatchKind<Row, Input>, rows: readonly unknown[], mode: BatchMode | undefined, answer: (outcomes: RowOutcome[]) => unknown) {
    const atomic = mode !== 'per_row'
    const refused = refusedBySchema(rows)
    const { unique } = kind
    let writing = rows.flatMap((_, index) => refused.has(index) ? [] : [index])
    if (unique !== undefined) {
      for (const [index, refusal] of repeatedValues(unique, rows, writing)) refused.set(index, refusal)
      // In the order of their unique values: two batches that share values take them in
      // the same order, and so never wait for each other in a circle (a deadlock).
      writing = writing.filter(index => !refused.has(index)).sort((a, b) => uniqueKey(unique, rows[a]) < uniqueKey(unique, rows[b]) ? -1 : 1)
    }
    const inserted = (skipTaken: boolean, db: Knex) => writing.length === 0
      ? Promise.resolve([])
      : insertAll(this.outboxed(this.audited(kind.insertion(writing.map(index => rows[index] as Input), skipTaken), kind.resource), kind.resource), db)

    /** The answer, from the records the INSERT made; an atomic batch with a row refused throws its 422. */
    const answered = (made: Array<Versioned<Row & { id: number }>>) => {
      const byIndex = new Map<number, Versioned<Row & { id: number }>>()
      if (unique === undefined) {
        writing.forEach((index, i) => byIndex.set(index, made[i]!))
      } else {
        // Rows skipped: a record holds their value (one committed meanwhile, too).
        const madeByKey = new Map(made.map(row => [uniqueKey(unique, row), row]))
        for (const index of writing) {
          const row = madeByKey.get(uniqueKey(unique, rows[index]))
          if (row === undefined) refused.set(index, takenRefusal(unique, rows[index], index))
          else byIndex.set(index, row)
        }
      }
      // Refused, an atomic batch names every row refused, by its schema or by the data.
      if (atomic && refused.size > 0) throw refusedAll(refused, rows.length)
      const outcomes = rows.map((_, index): RowOutcome => {
        const row = byIndex.get(index)
        if (row !== undefined) return { index, status: 201, id: row.id, etag: versionTag(row.version) }
        const { status, error } = refused.get(index)!
        return { index, status, error }
      })
      return { status: 200 as const, body: answer(outcomes) }
    }

    // Its rows cost the caller's rate limit before any is written, and before its key's
    // transaction holds a connection of the pool (a replay of its answer costs them too).
    await this.spendUnits(reply, rowUnits(rows.length, 'batch'))
    return this.createOnce(reply, async db => {
      // With an Idempotency-Key, `db` is the transaction that keeps it.
      if (db.isTransaction) return answered(await inserted(true, db))
      // Without, one statement is all-or-nothing by itself: a batch with nothing to undo is one
      // INSERT and no transaction (two round trips fewer). Atomic, it fails whole on a value a
      // record holds, and is then run again in a transaction, which names every row refused.
      // A statement of its own, it may meet an update import in a circle
      // (plugins/app/import-writes.ts): PostgreSQL then fails it whole, and it is run again.
      if (!atomic || refused.size === 0) {
        try {
          return answered(await retriedOnDeadlock(async () => inserted(!atomic, db)))
        } catch (error) {
          if (!isUniqueViolation(error)) throw error
        }
      }
      // The rows that remain, even where an atomic batch is refused already: the INSERT tells
      // which of them a record's value refuses too, and is rolled back with the 422.
      return db.transaction(async trx => answered(await inserted(true, trx)))
    })
  })
}, { name: 'batch-writes', dependencies: ['audit', 'change-outbox', 'idempotency', 'rate-limits'] })
