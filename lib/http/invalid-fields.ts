import type { ErrorCode } from './error-codes.js'

/** A 400 about request fields that the schemas cannot check (unknown names, passwords that differ). */
export class InvalidFields extends Error {
  readonly statusCode = 400
  readonly errorCode: ErrorCode
  readonly fields: Record<string, string[]>
  constructor (fields: Record<string, string[]>, part = 'request body') {
    super(`Invalid ${part}: ${Object.entries(fields).map(([field, problems]) => `${field} ${problems.join(', ')}`).join('; ')}`)
    this.fields = fields
    this.errorCode = part === 'request body' ? 'invalid_body' : 'invalid_parameter'
  }
}

/** How many of a batch's problems its message repeats: `data` holds them all. */
const SHOWN = 3

/**
 * A 422 of an atomic batch: what is wrong with its rows, by index and field (`3.email`); or of
 * an import with `on_conflict=error`, by line (the first 100 rows refused). Nothing was written.
 */
export class InvalidRows extends Error {
  readonly statusCode = 422
  readonly errorCode: ErrorCode = 'invalid_rows'
  readonly fields: Record<string, string[]>
  constructor (fields: Record<string, string[]>, rows: number, of: number, whole: 'batch' | 'file' = 'batch') {
    const told = Object.entries(fields).slice(0, SHOWN).map(([field, problems]) => `${field} ${problems.join(', ')}`).join('; ')
    const more = Object.keys(fields).length > SHOWN ? '; …' : ''
    super(whole === 'batch'
      ? `${rows} of the batch's ${of} rows cannot be created, so none was (\`data\` tells each): ${told}${more}`
      : `${rows} of the file's ${of} rows cannot be imported, so none was (\`data\` tells the first 100, by line): ${told}${more}`)
    this.fields = fields
  }
}
