import { createHash, randomBytes } from 'node:crypto'

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
