import { Type, type ObjectOptions, type TObject, type TSchema } from '@sinclair/typebox'
import { ERROR_CODE_NAMES, type ErrorCode } from '../lib/http/error-codes.js'
import { BATCH, IMPORT_FILE } from '../lib/http/validation.js'

/** The one error body of every route. */
export const ErrorBody = Type.Object({
  success: Type.Literal(false),
  statusCode: Type.Integer({ minimum: 400, maximum: 599, example: 404 }),
  error: Type.String({ description: 'The HTTP reason phrase', example: 'Not Found' }),
  code: Type.Unsafe<ErrorCode>({
    type: 'string',
    enum: ERROR_CODE_NAMES,
    description: 'What went wrong, as a stable name to switch on (the README\'s "Errors" lists them with their statuses)',
    example: 'not_found'
  }),
  message: Type.String({ example: 'Student 42 not found' }),
  param: Type.Optional(Type.String({
    description: 'On validation errors (400) and a batch\'s invalid rows (422): the first field or parameter `data` names, as sent',
    example: 'email'
  })),
  data: Type.Optional(Type.Record(Type.String(), Type.Array(Type.String()), {
    description: 'On validation errors (400): what is wrong, by field; on a batch\'s invalid rows (422), by row index and field (`3.email`)',
    example: { email: ['must match format "email"'] }
  }))
}, { $id: 'ErrorBody', additionalProperties: false, description: 'The body of every error response' })

const ERRORS: Record<number, string> = {
  400: 'Invalid request: `data` names the fields and what is wrong with them',
  401: 'No valid bearer token (with `WWW-Authenticate: Bearer`)',
  403: 'The caller lacks the permission this needs',
  404: 'No record with this id',
  408: 'The request body did not all arrive within the time limit (the connection is closed)',
  409: 'A unique value is taken, the change would leave no administrator, records of another table refer to the record to delete or the record refers to one that does not exist, or a request with the same `Idempotency-Key` is still under way (with `Retry-After`)',
  410: 'The events after this cursor may have been swept: it is older than EVENTS_RETENTION',
  412: '`If-Match` holds none of the record\'s current tags: it changed since it was read (`ETag` is its current tag); nothing was written',
  413: 'The request body is larger than the limit',
  415: 'The request body is not JSON',
  422: 'This `Idempotency-Key` was used with another request (method, path, body, caller); or, on a batch, rows of an atomic batch are invalid or conflict (`invalid_rows`, nothing written)',
  428: 'The service requires `If-Match` on updates and deletes (`REQUIRE_IF_MATCH`), and so takes no import with `on_conflict=update`',
  429: 'The caller\'s rate limit or daily quota is spent, or too many attempts (with `Retry-After`)',
  500: 'The server failed; the body says nothing of the cause',
  503: 'The database is unavailable or busy, or the service overloaded, shutting down or too slow to answer in time (with `Retry-After`); the request changed nothing'
}

/**
 * Response schemas of the given error statuses, all answering the ErrorBody; 429 (a caller's
 * rate limit), 500 and 503, which any route that reaches the database can answer, come with
 * every set, and 408 with every route that takes a body (one that lists 413).
 */
export function errorResponses (...statuses: number[]) {
  const all = [...new Set([...statuses, ...(statuses.includes(413) ? [408] : []), 429, 500, 503])].sort()
  return Object.fromEntries(all.map(status => [status, Type.Ref(ErrorBody, { description: ERRORS[status] })]))
}

/** The security of a route that an access token or an API key may call. */
export const TOKEN_OR_KEY: Array<Record<string, string[]>> = [{ bearerAuth: [] }, { apiKey: [] }]

export const IdParams = Type.Object({
  id: Type.Integer({ minimum: 1, description: 'The record\'s id', example: 42 })
})

/**
 * A list's answer: the page's schema, and its headers: `Link` to the next page when more
 * follow, `X-Total-Count` when a count was asked for.
 */
export function ListResponse (page: TSchema, description: string) {
  return described(page, `${description}; \`Link\` points at the next`, {
    link: Type.String({ description: 'When more records follow: `<path?…>; rel="next"`, the next page' }),
    'x-total-count': Type.Integer({ minimum: 0, description: 'With `count`: the number of records matching the filters, exact or estimated as asked' }),
    etag: Type.String({ description: 'The page\'s weak entity tag, for `If-None-Match`', example: 'W/"2jmj7l5rSw0yVb_vlWAYkK"' })
  })
}

/**
 * A list's answer (`ListResponse`) that is also exported, as `Accept` asks: every row its
 * filters and sort match, with no page limit, as CSV or NDJSON (plugins/app/lists.ts).
 */
export function Exportable (response: TSchema) {
  const { description, headers, ...json } = response as TSchema & { description: string, headers: Record<string, TSchema> }
  const told = 'Every row the filters and sort match, after `cursor` or `after` if given, with no page limit (`limit` and `count` do not apply; neither `Link` nor `X-Total-Count` is sent), read from one snapshot of the table and streamed as it is read, in the fields and forms of the JSON answer'
  return {
    description: `${description}; with \`Accept: text/csv\` or \`application/x-ndjson\`, the whole list`,
    headers,
    content: {
      'application/json': { schema: json },
      'text/csv': { schema: Type.String({ description: `${told}: a header line naming the fields, then a line a row, each ended by LF, a field quoted as RFC 4180 says where it needs it; an empty field is a null` }) },
      'application/x-ndjson': { schema: Type.String({ description: `${told}: a line a row, each the JSON of the record` }) }
    }
  }
}

/** A response's schema with its description and headers: a named schema is referenced. */
function described (schema: TSchema, description: string, headers: Record<string, TSchema>) {
  const options = { description, headers }
  return schema.$id === undefined ? { ...schema, ...options } : Type.Ref(schema, options)
}

const ETAG = Type.String({ description: 'The record\'s entity tag, for `If-None-Match` and `If-Match`', example: '"1234"' })

/** A response of a record, or a list page, with its `ETag` (and other headers). */
export function Tagged (schema: TSchema, description: string, headers: Record<string, TSchema> = {}) {
  return described(schema, description, { etag: ETAG, ...headers })
}

/** The answer to a GET or HEAD whose `If-None-Match` holds the current tag. */
export const NotModified = Type.Null({
  description: 'Not Modified: `If-None-Match` holds the current tag; no body, and `ETag` repeated',
  headers: { etag: ETAG }
})

/** Whether an answer is a repeat's, kept for its `Idempotency-Key`. */
const IDEMPOTENT_REPLAYED = Type.Literal('true', { description: 'The stored answer of an earlier request with this `Idempotency-Key`: nothing was written again' })

/** A create's answer: the record, its address, its tag (unless `tagged` is false), and whether it is a repeat's. */
export function Created (schema: TSchema, description: string, tagged = true) {
  const headers = { location: Type.String({ description: 'The new record\'s address' }), 'idempotent-replayed': IDEMPOTENT_REPLAYED }
  return tagged ? Tagged(schema, description, headers) : described(schema, description, headers)
}

/** A bulk write's 200 (a batch's, an import's): what it did, and whether the answer is a repeat's. */
export function BulkAnswer (schema: TSchema, description: string) {
  return described(schema, description, { 'idempotent-replayed': IDEMPOTENT_REPLAYED })
}

/** The headers a create takes: `Idempotency-Key`. */
export const CreateHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[\\x20-\\x7e]+$',
    description: 'Makes the create safe to retry: a repeat with the same key and the same request (method, path, caller, and body whatever the order of its keys) within `IDEMPOTENCY_TTL` (24 h) gets the first answer again (`Idempotent-Replayed: true`) and writes nothing. 1-255 printable ASCII characters; a UUID is a good key.',
    example: '3b1f9c1e-8e4a-4c2b-9f57-0c1d2e3f4a5b'
  }))
})

/** The most rows a batch takes. */
export const MAX_BATCH_ROWS = 1000

/** A batch's rows: each checked as a single create's body, on its own (lib/http/validation.ts). */
export function BatchBody (row: TSchema) {
  // Typed as rows of anything: the route learns which rows its schema took (request.insertRecords).
  return Type.Unsafe<unknown[]>(Type.Array(Type.Ref(row), {
    minItems: 1,
    maxItems: MAX_BATCH_ROWS,
    [BATCH]: true,
    description: `1 to ${MAX_BATCH_ROWS} records, each as a single create takes it. A row the schema refuses does not refuse the request: with \`mode=atomic\` the answer is 422 naming every refused row; with \`mode=per_row\` that row's outcome says why.`
  }))
}

/** How a batch is written. */
export const BatchQuery = Type.Object({
  mode: Type.Optional(Type.Union([Type.Literal('atomic'), Type.Literal('per_row')], {
    default: 'atomic',
    description: '`atomic` (the default): every row, or none (422 naming each row refused, by index); `per_row`: each row on its own, its outcome in the answer'
  }))
})

/** One row's outcome in a batch's answer, in the rows' order. */
export const BatchRowOutcome = Type.Object({
  index: Type.Integer({ minimum: 0, description: 'The row\'s place in the batch, from 0' }),
  status: Type.Integer({ description: '201 when the record was made; else what a single create of the row would have answered: 400 (invalid), 409 (a unique value taken, by a record or an earlier row)', example: 201 }),
  id: Type.Optional(Type.Integer({ minimum: 1, description: 'The new record\'s id', example: 42 })),
  etag: Type.Optional(Type.String({ description: 'The new record\'s entity tag', example: '"1234"' })),
  error: Type.Optional(Type.Object({
    code: Type.Unsafe<ErrorCode>({ type: 'string', enum: ERROR_CODE_NAMES, description: 'As the error body\'s `code`', example: 'email_taken' }),
    message: Type.String(),
    data: Type.Record(Type.String(), Type.Array(Type.String()), { description: 'What is wrong, by field', example: { email: ['must match format "email"'] } })
  }, { additionalProperties: false }))
}, { $id: 'BatchRowOutcome', additionalProperties: false })

/**
 * An import's body: a file, CSV or NDJSON, streamed (plugins/app/import-writes.ts reads and
 * checks it a row at a time; its schema is the OpenAPI document's alone).
 */
export function ImportBody (row: TSchema, fields: readonly string[]) {
  const file = (description: string) => ({ schema: Type.String({ [IMPORT_FILE]: true, description }) })
  const each = `each row as a single create takes it (${fields.map(field => `\`${field}\``).join(', ')})`
  return {
    description: `The file, UTF-8, streamed: ${each}. At most \`IMPORT_MAX_BYTES\` (100 MiB unless configured). Lines are counted from 1, a CSV's header being line 1.`,
    content: {
      'text/csv': file(`A header line naming the fields (in any order; each of ${fields.join(', ')}), then a record a line: RFC 4180 quoting, CRLF or LF line ends; a byte-order mark and empty lines are ignored; a quote left open, or a record over 64 KiB, refuses the file (400). An integer field's digits are taken as its number.`),
      'application/x-ndjson': file(`One JSON object a line, as a single create's body (the schema \`${String(row.$id)}\`); blank lines are ignored.`)
    }
  }
}

/** What an import does with a row whose unique value a record holds. */
export const ImportQuery = Type.Object({
  on_conflict: Type.Optional(Type.Union([Type.Literal('error'), Type.Literal('skip'), Type.Literal('update')], {
    default: 'error',
    description: 'A row whose e-mail address a record holds (without regard to case): `error` (the default) refuses the whole import, as does any bad row (422, nothing written); `skip` leaves the record as it is and counts the row as skipped; `update` changes the record to the row\'s values (refused, 428, with `REQUIRE_IF_MATCH`: an import carries no record\'s tag). With `skip` and `update`, a bad row is told in `errors` and the others are written.'
  }))
})

/** One row an import did not write, and why. */
export const ImportRowError = Type.Object({
  line: Type.Integer({ minimum: 1, description: 'The line of the file the row begins on (a CSV\'s header is line 1)' }),
  code: Type.Unsafe<ErrorCode>({ type: 'string', enum: ERROR_CODE_NAMES, description: 'As the error body\'s `code`: what a single create of the row would have answered', example: 'email_taken' }),
  message: Type.String(),
  data: Type.Record(Type.String(), Type.Array(Type.String()), { description: 'What is wrong, by field (`row` for the row as a whole)', example: { email: ['must match format "email"'] } })
}, { $id: 'ImportRowError', additionalProperties: false })

/** What an import did. */
export const ImportResult = Type.Object({
  inserted: Type.Integer({ minimum: 0, description: 'Records made' }),
  updated: Type.Integer({ minimum: 0, description: 'Records changed to a row\'s values (`on_conflict=update`)' }),
  unchanged: Type.Integer({ minimum: 0, description: 'Records that held a row\'s values already (`on_conflict=update`): not written' }),
  skipped: Type.Integer({ minimum: 0, description: 'Rows whose unique value a record held (`on_conflict=skip`), or one made by another request while the import ran (`on_conflict=update` too): not written' }),
  failed: Type.Integer({ minimum: 0, description: 'Rows refused: unreadable, invalid, or repeating an earlier row\'s unique value' }),
  errors: Type.Array(Type.Ref(ImportRowError), { maxItems: 100, description: 'The first 100 rows refused, in the file\'s order' })
}, { $id: 'ImportResult', additionalProperties: false })

/** The headers a GET of a record or list takes: `If-None-Match`. */
export const ReadHeaders = Type.Object({
  'if-none-match': Type.Optional(Type.String({ description: 'Tags the client holds (`"…"`, `W/"…"`, comma-separated, or `*`): when one is current, 304 with no body', example: '"1234"' }))
})

/** The headers an update or delete takes: `If-Match`. */
export const WriteHeaders = Type.Object({
  'if-match': Type.Optional(Type.String({ description: 'Tags the client read the record with (comma-separated), or `*` for any: when none is current, 412 and nothing is written. Required with `REQUIRE_IF_MATCH` (428 without).', example: '"1234"' }))
})

/** A timestamp as the service returns it: ISO 8601 in UTC. */
export const Timestamp = Type.String({ format: 'date-time', example: '2026-11-22T09:30:00.000Z' })

/**
 * The caller's password, asked again before what an access token alone must not do (`needed`
 * says what). Optional: a session reauthenticated in the last 5 minutes stands for it
 * (plugins/app/password-check.ts).
 */
export const CurrentPassword = (needed: string) => Type.Optional(Type.String({
  minLength: 1,
  maxLength: 128,
  writeOnly: true,
  description: `The caller's password as it is, ${needed}. Without it, the session must have been reauthenticated (POST /api/profile/reauthenticate) in the last 5 minutes (400 otherwise); ` +
    'sent, it is checked: a wrong one is 401 `invalid_credentials`, counted with logins (429 with Retry-After past their limits) and audited as a failed login'
}))

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

/**
 * A session's tokens, as login, register and refresh return them: `data` is the access token,
 * where the first backend's clients read it; the rest as OAuth 2.0 names them (RFC 6749, 5.1).
 */
export const TokenEnvelope = Type.Object({
  success: Type.Literal(true),
  data: Type.String({ description: 'The access token: a bearer JWT (HS256), for the Authorization header' }),
  refresh_token: Type.String({ pattern: '^[A-Za-z0-9_-]{43}$', description: 'Spent by POST /api/token/refresh for the next pair; opaque' }),
  expires_in: Type.Integer({ minimum: 1, description: 'The access token\'s lifetime, in seconds' }),
  token_type: Type.Literal('Bearer'),
  message: Type.Optional(Type.String())
}, { $id: 'TokenEnvelope', additionalProperties: false })

export const commonSchemas = [ErrorBody, NamedRef, TokenEnvelope, BatchRowOutcome, ImportRowError, ImportResult]
