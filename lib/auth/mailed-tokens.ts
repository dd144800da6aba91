import { createHash, randomBytes } from 'node:crypto'
import type { Knex } from 'knex'

/**
 * A token a mail's link carries (a password reset's, an address's verification): 32 random
 * bytes, base64url. The database keeps its SHA-256 only: a token is random, so no slow hash is
 * needed, and whoever reads the table cannot use what is in it.
 */
export const MAILED_TOKEN_PATTERN = '^[A-Za-z0-9_-]{43}$'

/** A new token, and the SHA-256 the database keeps of it. */
export function newMailedToken (): { token: string, hash: Buffer } {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: mailedTokenHash(token) }
}

/** What the database keeps of a token. */
export const mailedTokenHash = (token: string): Buffer => createHash('sha256').update(token).digest()

/**
 * The row of `table` (`password_resets`, `email_verifications`: a user's latest token) whose
 * token has this hash, if it still works: not expired, its user not deleted.
 */
export const usableToken = (db: Knex, table: string, hash: Buffer) => db(table).where('token_hash', hash).where('expires_at', '>', db.fn.now())
  .whereIn('user_id', db('users').select('id').whereNull('deleted_at'))

/** The body limit of the routes that take a mailed token or an address: a token and a password twice at most. */
export const MAILED_TOKEN_BODY_LIMIT = 4 * 1024
