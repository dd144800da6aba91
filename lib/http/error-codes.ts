/**
 * Every `code` an error answer can carry: its HTTP status and when it is answered. The one
 * declaration: the error handler, the OpenAPI document's enum and the README's table follow
 * it. A code is a stable name clients switch on; never rename one. `fallback` marks the code
 * of an error thrown without one, by its status (`codeOf`).
 */
export const ERROR_CODES = {
  invalid_body: { status: 400, meaning: 'A field of the request body is invalid (`data` says what, by field; `param` names the first)' },
  invalid_parameter: { status: 400, meaning: 'A query, path or header parameter is invalid (`data` says what; `param` names the first, as sent: `age[gte]`, `if-match`)' },
  malformed_json: { status: 400, meaning: 'The body is not JSON, or is empty' },
  malformed_url: { status: 400, meaning: 'The URL cannot be decoded (a bad percent-encoding)' },
  malformed_request: { status: 400, meaning: 'The request is not valid HTTP, or its body is not as long as its `Content-Length`' },
  bad_request: { status: 400, meaning: 'Another request the service cannot take (a CORS preflight without `Origin` and `Access-Control-Request-Method`)', fallback: true },
  invalid_reset_token: { status: 400, meaning: 'The password reset token is invalid, expired, spent, or not the latest one sent: ask for another' },
  invalid_verification_token: { status: 400, meaning: 'The e-mail verification token is invalid, expired, spent, or not the latest one sent: ask for another (`POST /api/email/resend`)' },
  invalid_passkey_token: { status: 400, meaning: 'The `passkey_token` of a passkey ceremony is unknown, expired (5 minutes), spent, or of another user: ask for new options' },
  unauthenticated: { status: 401, meaning: 'No bearer token or API key was sent (or an `Authorization` header of another form)', fallback: true },
  invalid_token: { status: 401, meaning: 'The token or API key is invalid, revoked or expired, or its session has ended: log in again' },
  token_expired: { status: 401, meaning: 'The access token has expired: refresh it' },
  invalid_credentials: { status: 401, meaning: 'The e-mail address and password (or the current password) do not match' },
  invalid_mfa_token: { status: 401, meaning: 'The `mfa_token` of a login is invalid, expired (5 minutes), spent, or has taken 5 wrong codes, or the password changed since: log in again' },
  invalid_mfa_code: { status: 401, meaning: 'The authenticator app\'s code (or the recovery code) does not match, or was used before' },
  invalid_passkey: { status: 401, meaning: 'The passkey is not one of the service\'s (at step-up: of the caller\'s), or its answer does not verify (another origin, another challenge, the user not verified, a signature counter gone back)' },
  invalid_refresh_token: { status: 401, meaning: 'The refresh token is invalid, expired or spent, or its session has ended: log in again' },
  permission_denied: { status: 403, meaning: 'The caller lacks the permission this needs', fallback: true },
  email_unverified: { status: 403, meaning: 'The account\'s e-mail address is not verified, and the service requires it for login (`REQUIRE_VERIFIED_EMAIL`): follow the link mailed to it, or ask for another (`POST /api/email/resend`)' },
  mfa_enrolment_required: { status: 403, meaning: 'A role of the account requires a second factor (`MFA_REQUIRED_ROLES`) and it has none: enrol an authenticator app (POST /api/profile/mfa/totp) with an access token; until then the account\'s tokens serve only that, the profile and logout, and its API keys nothing' },
  access_token_required: { status: 403, meaning: 'An API key cannot manage API keys, sessions or the profile, nor change its own user: use an access token' },
  not_found: { status: 404, meaning: 'No record with this id', fallback: true },
  route_not_found: { status: 404, meaning: 'No route serves this method and path (also `CONNECT`)' },
  method_not_allowed: { status: 405, meaning: 'The path exists but does not take this method (`Allow` names those it takes)', fallback: true },
  request_timeout: { status: 408, meaning: 'The request did not all arrive in time; the connection is closed', fallback: true },
  mfa_enrolled: { status: 409, meaning: 'The account has an authenticator app already: turn it off first' },
  mfa_not_enrolled: { status: 409, meaning: 'The account has no authenticator app (or no enrolment under way) for this' },
  email_taken: { status: 409, meaning: 'Another student or user has this e-mail address' },
  name_taken: { status: 409, meaning: 'Another role has this name' },
  last_admin: { status: 409, meaning: 'The change would leave no user holding Admin' },
  referenced: { status: 409, meaning: 'Records of another table (named in `message`) still refer to the record to delete' },
  missing_reference: { status: 409, meaning: 'The record refers to one that does not exist' },
  idempotency_key_in_progress: { status: 409, meaning: 'A request with this `Idempotency-Key` is still under way (with `Retry-After`)' },
  conflict: { status: 409, meaning: 'Another rule of the data refuses the change (the Admin role cannot be renamed, lose a permission or be deleted)', fallback: true },
  cursor_expired: { status: 410, meaning: 'The events after this cursor (or `after`) may have been swept (older than `EVENTS_RETENTION`): read the lists again, then follow the events from the newest' },
  precondition_failed: { status: 412, meaning: '`If-Match` holds none of the record\'s current tags (`ETag` is its current one); nothing was written', fallback: true },
  payload_too_large: { status: 413, meaning: 'The body is larger than the limit', fallback: true },
  unsupported_media_type: { status: 415, meaning: 'The body is not `application/json` (an import\'s: neither `text/csv` nor `application/x-ndjson`)', fallback: true },
  invalid_rows: { status: 422, meaning: 'Rows of an atomic batch, or of an import with `on_conflict=error`, are invalid or conflict: `data` names each by its index (an import\'s first 100, by line) and field (`3.email`), `param` one of them; nothing was written' },
  idempotency_key_reused: { status: 422, meaning: 'This `Idempotency-Key` was used with another request: use a new key' },
  if_match_required: { status: 428, meaning: 'The service requires `If-Match` on updates and deletes (`REQUIRE_IF_MATCH`), and so takes no import with `on_conflict=update`', fallback: true },
  rate_limited: { status: 429, meaning: 'The caller\'s rate limit or daily quota is spent (`RateLimit` tells what is left, `message` which), or too many attempts, or requests for unknown routes, in the window (with `Retry-After`)', fallback: true },
  headers_too_large: { status: 431, meaning: 'The request\'s headers (or URL) are larger than the limit', fallback: true },
  internal_error: { status: 500, meaning: 'The server failed; the body says nothing of the cause', fallback: true },
  mail_unavailable: { status: 503, meaning: 'The service sends no mail (`SMTP_URL` is not set): password reset and e-mail verification are off' },
  unavailable: { status: 503, meaning: 'The database is out of reach or busy, or the service overloaded, shutting down or too slow (with `Retry-After`); nothing was changed', fallback: true }
} as const satisfies Record<string, { status: number, meaning: string, fallback?: true }>

export type ErrorCode = keyof typeof ERROR_CODES

/** Every code, in the declaration's order (the OpenAPI enum's). */
export const ERROR_CODE_NAMES = Object.keys(ERROR_CODES) as ErrorCode[]

const FALLBACKS = new Map<number, ErrorCode>(Object.entries(ERROR_CODES)
  .filter(([, entry]) => 'fallback' in entry)
  .map(([code, { status }]) => [status, code as ErrorCode]))

/** The codes of Fastify's own errors whose status alone does not say what was wrong. */
const FRAMEWORK_CODES = new Map<unknown, ErrorCode>([
  ['FST_ERR_CTP_INVALID_JSON_BODY', 'malformed_json'],
  ['FST_ERR_CTP_EMPTY_JSON_BODY', 'malformed_json'],
  ['FST_ERR_CTP_INVALID_CONTENT_LENGTH', 'malformed_request']
])

/** An error's `code`: its own, else that of Fastify's error code, else its status's fallback. */
export function codeOf (error: { errorCode?: ErrorCode, code?: unknown }, status: number): ErrorCode {
  return error.errorCode ??
    FRAMEWORK_CODES.get(error.code) ??
    FALLBACKS.get(status) ??
    (status >= 500 ? 'internal_error' : 'bad_request')
}

/** An error answered with `code` and its declared status. */
export class CodedError extends Error {
  readonly statusCode: number
  readonly errorCode: ErrorCode
  constructor (errorCode: ErrorCode, message: string) {
    super(message)
    this.errorCode = errorCode
    this.statusCode = ERROR_CODES[errorCode].status
  }
}
