import { Type, type ObjectOptions, type TObject, type TSchema } from '@sinclair/typebox'

/** The one error body of every route. */
export const ErrorBody = Type.Object({
  success: Type.Literal(false),
  statusCode: Type.Integer({ minimum: 400, maximum: 599, example: 404 }),
  error: Type.String({ description: 'The HTTP reason phrase', example: 'Not Found' }),
  message: Type.String({ example: 'Student 42 not found' }),
  data: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()), {
    description: 'On validation errors (400): what is wrong, by field',
    example: { email: ['must match format "email"'] }
  }))
}, { $id: 'ErrorBody', additionalProperties: false, description: 'The body of every error response' })

const ERRORS: Record<number, string> = {
  400: 'Invalid request: `data` names the fields and what is wrong with them',
  401: 'No valid bearer token (with `WWW-Authenticate: Bearer`)',
  403: 'The caller lacks the permission this needs',
  404: 'No record with this id',
  408: 'The request body did not all arrive within the time limit (the connection is closed)',
  409: 'A unique value is taken, or the change would leave no administrator',
  413: 'The request body is larger than the limit',
  415: 'The request body is not JSON',
  429: 'Too many attempts (with `Retry-After`)',
  500: 'The server failed; the body says nothing of the cause',
  503: 'The database is unavailable or busy, or the service overloaded, shutting down or too slow to answer in time (with `Retry-After`); the request changed nothing'
}

/**
 * Response schemas of the given error statuses, all answering the ErrorBody; 500 and 503,
 * which any route that reaches the database can answer, come with every set, and 408 with
 * every route that takes a body (one that lists 413).
 */
export function errorResponses (...statuses: number[]) {
  const all = [...statuses, ...(statuses.includes(413) ? [408] : []), 500, 503].sort()
  return Object.fromEntries(all.map(status => [status, Type.Ref(ErrorBody, { description: ERRORS[status] })]))
}

export const IdParams = Type.Object({
  id: Type.Integer({ minimum: 1, description: 'The record\'s id', example: 42 })
})

/**
 * A list's answer: the page's schema, and its headers: `Link` to the next page when more
 * follow, `X-Total-Count` when a count was asked for.
 */
export function ListResponse (page: TSchema, description: string) {
  const options = {
    description: `${description}; \`Link\` points at the next`,
    headers: {
      link: Type.String({ description: 'When more records follow: `<path?…>; rel="next"`, the next page' }),
      'x-total-count': Type.Integer({ minimum: 0, description: 'With `count`: the number of records matching the filters, exact or estimated as asked' })
    }
  }
  return page.$id === undefined ? { ...page, ...options } : Type.Ref(page, options)
}

/** A timestamp as the service returns it: ISO 8601 in UTC. */
export const Timestamp = Type.String({ format: 'date-time', example: '2026-11-22T09:30:00.000Z' })

/** A body that must carry at least one of the given properties. */
export function AtLeastOneOf<T extends TObject> (schema: T, options: ObjectOptions = {}) {
  return Type.Partial(schema, { ...options, minProperties: 1, additionalProperties: false })
}

/** The success body of the authenticated interface: `{ success: true, data, message? }`. */
export function Envelope<T extends TSchema> (data: T, options: ObjectOptions = {}) {
  return Type.Object({
    success: Type.Literal(true),
    data,
    message: Type.Optional(Type.String())
  }, { additionalProperties: false, ...options })
}

/** A role or permission as other records name it. */
export const NamedRef = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String()
}, { $id: 'NamedRef', additionalProperties: false })

/** A JWT, as login and register return it. */
export const TokenEnvelope = Envelope(Type.String({ description: 'A bearer token (JWT, HS256)' }), { $id: 'TokenEnvelope' })

export const commonSchemas = [ErrorBody, NamedRef, TokenEnvelope]
