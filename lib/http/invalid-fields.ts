import type { ErrorCode } from './error-codes.js'

/** A 400 about request fields that the schemas cannot check (unknown names, passwords that differ). */
export class InvalidFields extends Error {
  readonly statusCode = 400
  readonly errorCode: ErrorCode
  constructor (readonly fields: Record<string, string[]>, part = 'request body') {
    super(`Invalid ${part}: ${Object.entries(fields).map(([field, problems]) => `${field} ${problems.join(', ')}`).join('; ')}`)
    this.errorCode = part === 'request body' ? 'invalid_body' : 'invalid_parameter'
  }
}
