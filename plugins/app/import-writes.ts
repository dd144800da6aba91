import type { Readable } from 'node:stream'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import type { TObject } from '@sinclair/typebox'
import type { Knex } from 'knex'
import { createRowsTable, copyRows, insertRows, takenRows, takeRepeats, updateHeld, NAMED_ROWS, type ImportTarget, type RefusedRows, type UniqueColumn, type Updates } from '../../lib/db/import-table.js'
import { retriedOnDeadlock } from '../../lib/db/deadlock-retry.js'
import { onConnectionOf } from '../../lib/db/prepared-query.js'
import { CodedError, type ErrorCode } from '../../lib/http/error-codes.js'
import { fileTooLarge, readImportFile, IMPORT_MEDIA_TYPES, type FileRecord, type ImportFile, type ImportFormat } from '../../lib/http/import-file.js'
import { InvalidRows } from '../../lib/http/invalid-fields.js'
import { recordValidator } from '../../lib/http/validation.js'
import { fieldErrors } from './errors.js'
import { rowUnits } from '../../lib/limits/costs.js'

/** What an import does with a row whose unique value a record holds: refuse the file, skip the row, or update the record. */
export type OnConflict = 'error' | 'skip' | 'update'

/** What the imports need of a kind. */
export interface ImportKind<Input> {
  /** The resource, as the audit log and the change outbox name it. */
  resource: string
  target: ImportTarget<Input>
  /** A row's schema: a single create's body. */
  row: TObject
  /** The column records are matched on (`on_conflict`), and the error of a value taken. */
  unique?: UniqueColumn<Input> & { takenError: (value: string) => CodedError }
}

/** A row not written, and why. */
export interface RowError {
  line: number
  code: ErrorCode
  message: string
  data: Record<string, string[]>
}

/** What an import did: the answer's body (schemas/common.ts's ImportResult). */
export interface ImportResult {
  inserted: number
  updated: number
  unchanged: number
  skipped: number
  failed: number
  errors: RowError[]
}

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Imports the request's file (its body, a stream; a route of `acceptImportFiles`) as
     * records of `kind`, in one transaction: each row checked as a single create's body, loaded
     * with COPY, then written by one INSERT (and, with `on_conflict=update`, one UPDATE) whose
     * audit entries and change events ride in its statement. Answers 200 with `answer`'s body
     * around what it did; with `on_conflict=error`, a row refused writes nothing: 422 naming
     * the first 100 by line. One Idempotency-Key covers the file.
     */
    importRecords: <Input>(reply: FastifyReply, kind: ImportKind<Input>, onConflict: OnConflict | undefined, answer: (result: ImportResult) => unknown) => Promise<FastifyReply>
  }
}

/** Rows read between two turns of the event loop given to other requests. */
const YIELD_EVERY = 1024

/** Rows refused: the first NAMED_ROWS in the file's order, and how many in all. */
class RowErrors {
  total = 0
  private readonly first: RowError[] = []

  add (error: RowError): void {
    this.total++
    this.first.push(error)
    // Kept sorted and short: the rows refused while reading come in the file's order, those
    // refused by the data after, each set in order.
    if (this.first.length > 2 * NAMED_ROWS) this.trim()
  }

  /** Rows refused by the data, the first of them named: `error` makes each one's error. */
  addRefused (refused: RefusedRows, error: (row: RefusedRows['first'][number]) => RowError): void {
    for (const row of refused.first) this.add(error(row))
    this.total += refused.total - refused.first.length
  }

  private trim (): void {
    this.first.sort((a, b) => a.line - b.line).splice(NAMED_ROWS)
  }

  listed (): RowError[] {
    this.trim()
    return this.first
  }
}

/** The 422 of an import that writes nothing: the first rows refused, their fields by line (`3.email`). */
function refusedAll (errors: RowErrors, rows: number): InvalidRows {
  const data: Record<string, string[]> = {}
  for (const { line, data: fields } of errors.listed()) {
    for (const [field, problems] of Object.entries(fields)) data[field === 'row' ? String(line) : `${line}.${field}`] = problems
  }
  return new InvalidRows(data, errors.total, rows, 'file')
}

const problems = (data: Record<string, string[]>) => Object.entries(data).map(([field, told]) => `${field} ${told.join(', ')}`).join('; ')

/** A row as its schema checks it: its strings trimmed, as a JSON body's are; what is wrong with it, if anything. */
function checkedRow (record: FileRecord, validate: ReturnType<typeof recordValidator>): { row: Record<string, unknown> } | { error: RowError } {
  const { line } = record
  if ('unreadable' in record) {
    return { error: { line, code: record.code, message: `Line ${line} cannot be read: ${record.unreadable}`, data: { row: [record.unreadable] } } }
  }
  const row = record.fields
  for (const [field, value] of Object.entries(row)) {
    if (typeof value !== 'string') continue
    if (value.includes('\u0000')) {
      const data = { [field]: ['must not contain NUL characters'] }
      return { error: { line, code: 'invalid_body', message: `Invalid row: ${problems(data)}`, data } }
    }
    row[field] = value.trim()
  }
  if (validate(row)) return { row }
  const data = fieldErrors(validate.errors as FastifySchemaValidationError[], 'row')
  return { error: { line, code: 'invalid_body', message: `Invalid row: ${problems(data)}`, data } }
}

/** The error of a row whose unique value a record holds, or (`holder`) an earlier line of the file. */
function takenError<Input> (unique: NonNullable<ImportKind<Input>['unique']>, { line, value, holder }: RefusedRows['first'][number]): RowError {
  const error = unique.takenError(value)
  const message = holder === undefined ? error.message : `${error.message} (line ${holder} of this file has it)`
  return { line, code: error.errorCode, message, data: { [unique.column]: [message] } }
}

/**
 * The routes of `register` take an import's file as it streams in (CSV or NDJSON), and JSON
 * no more (415): their body is the request's stream, read by `request.importRecords`.
 */
export function acceptImportFiles (instance: FastifyInstance): void {
  instance.removeAllContentTypeParsers()
  instance.addContentTypeParser(Object.values(IMPORT_MEDIA_TYPES), (_request, payload, done) => { done(null, payload) })
  // An import's time is IMPORT_TIMEOUT, not HANDLER_TIMEOUT (plugins/app/request-timing.ts).
  const { timeoutMs } = instance.config.imports
  // Nor is a client that waits (Expect: 100-continue) told to send its file before the route's
  // checks (plugins/app/expect-continue.ts).
  instance.addHook('onRoute', route => { route.config = { ...route.config, timeoutMs, continuesBody: true } })
}

/** The file's form, by its media type (the content-type parsers took no other). */
const formatOf = (request: FastifyRequest): ImportFormat => request.headers['content-type']!.toLowerCase().startsWith(IMPORT_MEDIA_TYPES.csv) ? 'csv' : 'ndjson'

/**
 * Imports of files, on the write path's road (plugins/app/write-path.ts): the write guard and
 * the Idempotency-Key (`createOnce`, over the file's digest), one transaction under
 * IMPORT_TIMEOUT, the rows checked as they stream in and loaded with COPY into a table of the
 * transaction's own, then checked against each other and the records, and written by
 * statements whose audit entries and outbox rows ride in them.
 */
export default fp(async (fastify) => {
  const { maxBytes, timeoutMs } = fastify.config.imports

  fastify.decorateRequest('importRecords', async function <Input> (this: FastifyRequest, reply: FastifyReply, kind: ImportKind<Input>, onConflict: OnConflict = 'error', answer: (result: ImportResult) => unknown) {
    // A record changed without its tag could lose another's change: where the service asks for
    // tags, an import (which cannot carry one a record) changes none.
    if (onConflict === 'update' && fastify.config.requireIfMatch) {
      throw fastify.httpErrors.createError(428, 'This service requires If-Match on updates, and an import cannot carry a tag for each record: import with on_conflict=skip or error, and change records with PUT or PATCH')
    }
    if (this.body === undefined) throw new CodedError('unsupported_media_type', `An import takes a file: ${Object.values(IMPORT_MEDIA_TYPES).join(' or ')}`)
    // UTF-8 only: text of another charset would be stored wrong, not refused.
    const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(this.headers['content-type']!)?.[1]
    if (charset !== undefined && !/^utf-?8$/i.test(charset)) throw new CodedError('unsupported_media_type', `An import's file is UTF-8, not ${charset}`)
    // A body announced larger than the limit is refused before a byte of it is read.
    if (Number(this.headers['content-length']) > maxBytes) {
      reply.header('connection', 'close')
      throw fileTooLarge(maxBytes)
    }
    // Before a byte is read: refused (503), the body is left to Node, which drops it.
    const release = this.holdBulkSlot()
    // Once the file is all in, the socket may stay quiet while the rows are written, longer
    // than the server's own limit; until then, an upload that stalls for REQUEST_TIMEOUT is
    // cut (and gives its slot back). (An injected request's socket is a stand-in without timeouts.)
    const socket = this.raw.socket as Partial<typeof this.raw.socket>
    this.raw.once('end', () => socket.setTimeout?.(timeoutMs))
    const { target, unique, resource } = kind
    const fields = Object.keys(target.columns)
    const integers = new Set(Object.entries(target.columns).filter(([, type]) => type === 'smallint' || type === 'integer').map(([name]) => name))
    const file: ImportFile = readImportFile(this.body as Readable, formatOf(this), maxBytes, fields, integers)
    const validate = recordValidator(kind.row)
    const atomic = onConflict === 'error'

    const load = (trx: Knex) => onConnectionOf(trx, async connection => {
      // IMPORT_TIMEOUT holds for the whole import, from its request's arrival: each statement
      // has what is left of it (the COPY, the upload's time).
      const limitLeft = () => connection.query(`set local statement_timeout = ${Math.max(1, Math.ceil(timeoutMs - reply.elapsedTime))}`)
      await limitLeft()
      // Checked and let in: a client that waits is told to send its file.
      reply.continueBody()
      await createRowsTable(connection, target)
      const copy = copyRows(connection, target)
      const errors = new RowErrors()
      let rows = 0
      let loaded = 0
      try {
        for await (const record of file.records) {
          // Rows refused come without a wait on PostgreSQL: the other requests get their turn.
          if (++rows % YIELD_EVERY === 0) await new Promise(resolve => setImmediate(resolve))
          const checked = checkedRow(record, validate)
          if ('error' in checked) {
            errors.add(checked.error)
          } else {
            // Loaded even when a row refused already means nothing will be written: the data
            // is checked for every row, and the 422 names each row refused.
            await copy.write(record.line, checked.row as Input)
            loaded++
          }
        }
        await copy.end()
      } catch (error) {
        copy.abort(error as Error)
        throw error
      } finally {
        // The rows read cost the caller's rate limit once the import is answered, written or
        // refused, a file that breaks off too.
        this.chargeUnits(rowUnits(rows, 'import'))
      }

      await limitLeft()
      let repeated = 0
      if (unique !== undefined) {
        const repeats = await takeRepeats(connection, unique)
        repeated = repeats.total
        errors.addRefused(repeats, row => takenError(unique, row))
        if (atomic) errors.addRefused(await takenRows(connection, target, unique), row => takenError(unique, row))
      }
      if (atomic && errors.total > 0) throw refusedAll(errors, rows)

      const write = async () => {
        let updates: Updates = { matched: 0, updated: 0 }
        if (onConflict === 'update' && unique !== undefined) {
          const fieldsShown = target.returning
          await limitLeft()
          updates = await updateHeld(connection, target, unique, [...this.auditedUpdates(resource, fieldsShown), ...this.outboxedUpdates(resource, fieldsShown)])
        }
        await limitLeft()
        return { updates, inserted: await insertRows(connection, target, unique, [...this.auditedCreates(resource), ...this.outboxedCreates(resource)]) }
      }
      // Updating, an import holds the addresses it updates before those it inserts, and so may
      // meet in a circle another that inserts them all in their order (an import, a batch):
      // PostgreSQL fails one of the two, and if it is this one, its writes are tried again.
      if (onConflict === 'update') await connection.query('savepoint import_writes')
      const { updates, inserted } = onConflict === 'update'
        ? await retriedOnDeadlock(write, () => connection.query('rollback to savepoint import_writes'))
        : await write()
      const skipped = loaded - repeated - updates.matched - inserted
      // Checked free, a value was taken by a record committed since: write nothing, as promised.
      if (atomic && skipped > 0 && unique !== undefined) {
        throw new CodedError(unique.takenError('').errorCode, `The ${unique.column} of ${skipped} rows was taken by records made while the file was imported, so nothing was: try again`)
      }
      const result: ImportResult = { inserted, updated: updates.updated, unchanged: updates.matched - updates.updated, skipped, failed: errors.total, errors: errors.listed() }
      return { status: 200 as const, body: answer(result) }
    })

    const refused = (error: unknown) => {
      // Refused, perhaps before the file was all read (too large, a bad header, a key under
      // way): what has arrived is dropped, and the connection closes rather than wait for the rest.
      reply.header('connection', 'close')
      this.raw.unpipe()
      this.raw.resume()
      throw error
    }
    return this.createOnce(reply, db => db.isTransaction ? load(db) : db.transaction(load), { drain: async () => { reply.continueBody(); await file.drain() }, digest: file.digest })
      .catch(refused)
      .finally(release)
  })
}, { name: 'import-writes', dependencies: ['config', 'audit', 'change-outbox', 'idempotency', 'bulk-slots', 'expect-continue', 'rate-limits'] })
