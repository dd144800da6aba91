import { createHash } from 'node:crypto'
import { finished, pipeline, Transform, type Readable, type TransformCallback } from 'node:stream'
import { finished as streamFinished } from 'node:stream/promises'
import { CsvError, parse, type Options } from 'csv-parse'
import { CodedError } from './error-codes.js'
import { InvalidFields } from './invalid-fields.js'

/** The forms an import's file takes: CSV with a header row naming the fields, or a JSON object a line. */
export type ImportFormat = 'csv' | 'ndjson'

/** The media type of each form, as `Content-Type` names it. */
export const IMPORT_MEDIA_TYPES: Record<ImportFormat, string> = { csv: 'text/csv', ndjson: 'application/x-ndjson' }

/**
 * The longest record a file may hold, in bytes: a record of the largest kind is some 1.1 KB;
 * a longer one is refused as a row, and is never held whole.
 */
export const MAX_RECORD_BYTES = 64 * 1024

/**
 * A record of the file: the line it begins on (the header is line 1) and its fields, or why it
 * cannot be read (`malformed_json` for a line that is no JSON, else `invalid_body`).
 */
export type FileRecord = { line: number, fields: Record<string, unknown> } | { line: number, unreadable: string, code: 'invalid_body' | 'malformed_json' }

/** What an import's file holds, read as it streams in. */
export interface ImportFile {
  records: AsyncIterable<FileRecord>
  /** The SHA-256 of every byte of the file (base64url), once `records` (or `drain`) has read it to its end. */
  digest: () => string
  /** Reads the file's bytes to their end without reading its records: for the digest alone. */
  drain: () => Promise<void>
}

/** A file larger than IMPORT_MAX_BYTES: 413, and nothing written. */
export const fileTooLarge = (maxBytes: number) => new CodedError('payload_too_large', `The file is larger than the import's limit of ${maxBytes} bytes (IMPORT_MAX_BYTES): split it, and import each part with an Idempotency-Key of its own`)

/** Counts and digests the bytes that pass, and fails past `maxBytes`. */
class MeteredBytes extends Transform {
  readonly hash = createHash('sha256')
  private bytes = 0
  private readonly maxBytes: number
  constructor (maxBytes: number) {
    super()
    this.maxBytes = maxBytes
  }

  override _transform (chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    this.bytes += chunk.length
    if (this.bytes > this.maxBytes) return done(fileTooLarge(this.maxBytes))
    this.hash.update(chunk)
    done(null, chunk)
  }
}

/** The file's bytes through the meter: a failure of the body (a client gone) fails the records too. */
function metered (body: Readable, maxBytes: number): MeteredBytes {
  const meter = new MeteredBytes(maxBytes)
  // The bytes flow in before the records are read: an error then (too large) is kept by the
  // stream, and thrown to whoever reads it, not emitted to nobody.
  meter.on('error', () => {})
  // A client gone before the whole request arrived, even before this was called: the records
  // end in that error (`finished` tells of a body closed already, too).
  const cut = () => meter.destroy(new Error('The request was not received whole'))
  type Listener = (event: string, listener: () => void) => void
  const request = body as Readable & { complete?: boolean, socket?: { destroyed?: boolean, once?: Listener, off?: Listener } }
  const closed = () => { if (request.complete === false) cut() }
  // The socket outlives the request (keep-alive): its listener goes once the body has ended.
  finished(body, error => {
    request.socket?.off?.('close', closed)
    if (error) cut()
  })
  if (request.complete === false) {
    // Gone already, its socket closed before the route began to read: no event will come.
    // (A moment between the headers' parsing and the route that tests do not catch.)
    /* c8 ignore next */
    if (request.socket?.destroyed === true) cut()
    else request.socket?.once?.('close', closed)
  }
  body.pipe(meter)
  return meter
}

/**
 * The header row's field names, each a field of the kind's and named once; a file whose header
 * is not so is refused whole (400), as none of its rows could be read right.
 */
function headerFields (names: readonly string[], fields: readonly string[]): string[] {
  const named = names.map(name => name.trim())
  const problems: string[] = []
  for (const [index, name] of named.entries()) {
    if (!fields.includes(name)) problems.push(`column ${index + 1} names "${name.slice(0, 64)}", which is not a field (${fields.join(', ')})`)
    else if (named.indexOf(name) !== index) problems.push(`column ${index + 1} names "${name}" again`)
  }
  if (problems.length > 0) throw new InvalidFields({ header: problems })
  return named
}

const DECIMAL_INTEGER = /^-?\d{1,15}$/

/** A CSV value as the schema checks it: an integer field's digits as a number, any other as the text. */
const csvValue = (value: string, integer: boolean): unknown => integer && DECIMAL_INTEGER.test(value.trim()) ? Number(value) : value

/** The CSV cannot be read past a line (a quote left open, a record too long): refused whole, as none after it could be read right. */
function unreadableCsv (error: unknown, line: number): InvalidFields {
  const told = (error as Error).message.replace(/ (on|at) line \d+/, '')
  return new InvalidFields({ [String(line)]: [`The file cannot be read from this line on: ${told}`] })
}

/**
 * The records of a CSV file: RFC 4180 (quotes doubling quotes, newlines inside quotes), a
 * byte-order mark skipped, CRLF or LF line ends, empty lines ignored. A record with more or
 * fewer fields than the header is told as a row refused; a file the parser cannot read on (a
 * quote left open, a record past MAX_RECORD_BYTES) is refused whole, 400: no later row's
 * bounds could be trusted.
 */
async function * csvRecords (bytes: Readable, fields: readonly string[], integers: ReadonlySet<string>): AsyncGenerator<FileRecord> {
  // Called in the file's order: each record begins on the line after the previous one ended,
  // empty lines skipped.
  let ended = 0
  let blank = 0
  const options: Options<{ line: number, record: string[] }, string[]> = {
    bom: true,
    record_delimiter: ['\r\n', '\n'],
    skip_empty_lines: true,
    relax_column_count: true,
    max_record_size: MAX_RECORD_BYTES,
    on_record: (record: string[], info) => {
      const line = ended + 1 + info.empty_lines - blank
      blank = info.empty_lines
      ended = info.lines
      return { line, record }
    }
  }
  // `pipeline`: a failure of the bytes, even one before this began (a client gone), fails the parser.
  const parser = parse(options as unknown as Options)
  pipeline(bytes, parser, () => {})
  let names: string[] | undefined
  try {
    for await (const { line, record } of parser as AsyncIterable<{ line: number, record: string[] }>) {
      if (names === undefined) {
        names = headerFields(record, fields)
        continue
      }
      if (record.length !== names.length) {
        yield { line, unreadable: `The line has ${record.length} fields; the header names ${names.length}`, code: 'invalid_body' }
        continue
      }
      const row: Record<string, unknown> = {}
      for (const [index, name] of names.entries()) row[name] = csvValue(record[index]!, integers.has(name))
      yield { line, fields: row }
    }
  } catch (error) {
    // The parser's own errors: the line after the last record read is where it failed.
    if (error instanceof CsvError) throw unreadableCsv(error, ended + 1)
    throw error
  }
  if (names === undefined) throw new InvalidFields({ header: ['is missing: a CSV file begins with a line naming its fields'] })
}

/**
 * The lines of a stream, each with its number (from 1); a line longer than MAX_RECORD_BYTES is
 * given as `undefined`, its bytes dropped as they come.
 */
async function * lines (bytes: Readable): AsyncGenerator<{ line: number, text: string | undefined }> {
  let line = 1
  let held: Buffer[] = []
  let heldBytes = 0
  let tooLong = false
  const done = (): { line: number, text: string | undefined } => {
    const text = tooLong ? undefined : Buffer.concat(held).toString('utf8')
    held = []
    heldBytes = 0
    tooLong = false
    return { line: line++, text }
  }
  for await (const chunk of bytes as AsyncIterable<Buffer>) {
    let from = 0
    for (let end = chunk.indexOf(10, from); end !== -1; end = chunk.indexOf(10, from)) {
      if (!tooLong && heldBytes + end - from <= MAX_RECORD_BYTES) held.push(chunk.subarray(from, end))
      else tooLong = true
      from = end + 1
      yield done()
    }
    const rest = chunk.length - from
    if (tooLong || heldBytes + rest > MAX_RECORD_BYTES) {
      tooLong = true
    } else if (rest > 0) {
      held.push(chunk.subarray(from))
      heldBytes += rest
    }
  }
  if (heldBytes > 0 || tooLong) yield done()
}

/** The records of an NDJSON file: a JSON object a line; blank lines ignored, a byte-order mark skipped. */
async function * ndjsonRecords (bytes: Readable): AsyncGenerator<FileRecord> {
  for await (const { line, text } of lines(bytes)) {
    if (text === undefined) {
      yield { line, unreadable: `The line is longer than ${MAX_RECORD_BYTES} bytes`, code: 'invalid_body' }
      continue
    }
    const json = line === 1 && text.startsWith('\uFEFF') ? text.slice(1) : text
    if (json.trim() === '') continue
    let fields: unknown
    try {
      fields = JSON.parse(json)
    } catch {
      yield { line, unreadable: 'The line is not JSON', code: 'malformed_json' }
      continue
    }
    if (typeof fields !== 'object' || fields === null || Array.isArray(fields)) yield { line, unreadable: 'must be object', code: 'invalid_body' }
    else yield { line, fields: fields as Record<string, unknown> }
  }
}

/**
 * An import's file as records, read from `body` as the consumer takes them (the body's
 * backpressure holds the client back), never held whole; past `maxBytes`, reading fails with
 * a 413. `fields` are the kind's, `integers` those that are numbers (a CSV's text is turned into
 * them; an NDJSON line's values are taken as they are).
 */
export function readImportFile (body: Readable, format: ImportFormat, maxBytes: number, fields: readonly string[], integers: ReadonlySet<string>): ImportFile {
  const bytes = metered(body, maxBytes)
  return {
    records: format === 'csv' ? csvRecords(bytes, fields, integers) : ndjsonRecords(bytes),
    // The form is part of the request: the same bytes as CSV and as NDJSON are two imports.
    digest: () => `${format} ${bytes.hash.copy().digest('base64url')}`,
    drain: async () => {
      bytes.resume()
      await streamFinished(bytes)
    }
  }
}
