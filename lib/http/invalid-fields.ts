/** A 400 about request fields that the schemas cannot check (unknown names, passwords that differ). */
export class InvalidFields extends Error {
  readonly statusCode = 400
  constructor (readonly fields: Record<string, string[]>, part = 'request body') {
    super(`Invalid ${part}: ${Object.entries(fields).map(([field, problems]) => `${field} ${problems.join(', ')}`).join('; ')}`)
  }
}
