import { createHash, randomBytes } from 'node:crypto'

/** A password reset token: 32 random bytes, base64url, as the mail's link carries it. */
export const RESET_TOKEN_PATTERN = '^[A-Za-z0-9_-]{43}$'

/** How long a token sent works. */
export const RESET_TOKEN_TTL_SECONDS = 3_600

/** A new token, and the SHA-256 the database keeps of it. */
export function newResetToken (): { token: string, hash: Buffer } {
  const token = randomBytes(32).toString('base64url')
  return { token, hash: resetTokenHash(token) }
}

/** What the database keeps of a token: its SHA-256 (a token is random, so no slow hash is needed). */
export const resetTokenHash = (token: string): Buffer => createHash('sha256').update(token).digest()
