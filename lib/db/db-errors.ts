import type { ErrorCode } from '../http/error-codes.js'

/** Whether the error is PostgreSQL's unique_violation, on the given index if one is named. */
export function isUniqueViolation (error: unknown, index?: string): boolean {
  const { code, constraint } = error as { code?: string, constraint?: string }
  return code === '23505' && (index === undefined || constraint === index)
}

/** The 409 of `conflict()` for a write that hit the unique index; any other error unchanged. */
export function uniqueConflict (error: unknown, index: string, conflict: () => Error): unknown {
  return isUniqueViolation(error, index) ? conflict() : error
}

/**
 * What a foreign key's refusal tells the client, by the write it refused: a delete, of a
 * record that rows of another table still refer to (PostgreSQL names that table); any other
 * write, of a row whose reference names a record that does not exist. Nothing of the
 * constraint or the key's values, and nothing read from the message's text, which is in the
 * server's language. Undefined for any other error.
 */
export function foreignKeyRefusal (error: unknown, method: string): { code: ErrorCode, message: string } | undefined {
  const { code, table } = error as { code?: unknown, table?: unknown }
  // foreign_key_violation; and restrict_violation, which PostgreSQL 18 raises where a key
  // declared ON DELETE (or ON UPDATE) RESTRICT refuses a change of the record referred to
  // (earlier versions raise foreign_key_violation): always the referred-to side.
  if (code !== '23503' && code !== '23001') return undefined
  if ((code === '23001' || method === 'DELETE') && typeof table === 'string') return { code: 'referenced', message: `The record is still referred to by ${table}; change or remove those first` }
  return { code: 'missing_reference', message: 'The record refers to one that does not exist' }
}

// The errors of connections that failed (lib/db/service-client.ts marks them): pg gives the
// ones it makes itself (a connection ended under a query, a connect that timed out) no code.
const connectionFailures = new WeakSet<object>()

/** Marks the error as a connection's failure; returns it. */
export function markConnectionFailure<T> (error: T): T {
  if (typeof error === 'object' && error !== null) connectionFailures.add(error)
  return error
}

// Node's socket errors: the server refused, reset, or did not answer, or its name is unknown.
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN'])
// PostgreSQL's: the server shutting down, crashed and restarting, or not yet up.
const SHUTDOWN_CODES = new Set(['57P01', '57P02', '57P03'])

/**
 * Whether the error means the database is out of reach: a connection that could not be made
 * or was lost (marked, or by node's socket code; ENOENT only for a Unix socket that is gone,
 * not any missing file), PostgreSQL's class 08 (connection exception), 53 (insufficient
 * resources: too many connections) and 57P01–57P03, or no free connection in time (the
 * pool's wait is marked; knex runs on that pool).
 */
export function databaseUnavailable (error: unknown): boolean {
  if (typeof error !== 'object' || error === null) return false
  if (connectionFailures.has(error)) return true
  const { code, syscall } = error as { code?: unknown, syscall?: unknown }
  if (typeof code !== 'string') return false
  if (code === 'ENOENT') return syscall === 'connect'
  return SOCKET_CODES.has(code) || code.startsWith('08') || code.startsWith('53') || SHUTDOWN_CODES.has(code)
}

// PostgreSQL's codes for a statement that gave way and wrote nothing: cancelled at
// DB_STATEMENT_TIMEOUT, a lock not had, a serialization failure, a deadlock, and a
// transaction left idle past DB_IDLE_IN_TRANSACTION_TIMEOUT.
const BUSY_CODES = new Set(['57014', '55P03', '40001', '40P01', '25P03'])

/** Whether the error means the database was too busy for the statement, which wrote nothing. */
export function databaseBusy (error: unknown): boolean {
  return BUSY_CODES.has((error as { code?: string }).code!)
}

// PostgreSQL's codes of errors after which the server closes the session: terminated, crashed,
// shutting down, and idle too long in a transaction or out of one.
const SESSION_ENDING_CODES = new Set(['57P01', '57P02', '57P03', '57P05', '25P03'])

/**
 * Whether the error ended the database session: the server closes the connection right after
 * it, but pg hears of the close only later, and until then takes the connection for live. By
 * code, or by severity (FATAL, PANIC) for one without a code of those.
 */
export function endsSession (error: unknown): boolean {
  const { code, severity } = error as { code?: string, severity?: string }
  return SESSION_ENDING_CODES.has(code!) || severity === 'FATAL' || severity === 'PANIC'
}
