import { createHash, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto'

/**
 * Refresh tokens: 32 random bytes in base64url (43 characters), kept in the database only as
 * their SHA-256. A token's successor is not random but derived from it with a key of the
 * service's, so that a token presented twice within the reuse grace (two tabs refreshing at
 * once) gets the same successor without the successor being kept anywhere: only whoever holds
 * the token and the key can compute it.
 */
export const REFRESH_TOKEN = /^[A-Za-z0-9_-]{43}$/

/** The key successors are derived with, from JWT_SECRET: every instance derives the same. */
export function refreshSecret (jwtSecret: string): KeyObject {
  return createSecretKey(createHmac('sha256', jwtSecret).update('refresh tokens').digest())
}

/** A new session's first refresh token. */
export const newRefreshToken = (): string => randomBytes(32).toString('base64url')

/** What the database keeps of a token. */
export const refreshHash = (token: string): Buffer => createHash('sha256').update(token).digest()

/** The token that replaces `token` when it is spent. */
export const successorOf = (token: string, secret: KeyObject): string =>
  createHmac('sha256', secret).update(token).digest().toString('base64url')

/**
 * The id of the access token issued beside a successor, as a version 4 UUID: derived too, so
 * that the same successor comes with the same access token.
 */
export function accessTokenId (successor: string): string {
  const bytes = createHash('sha256').update(`access token of ${successor}`).digest().subarray(0, 16)
  bytes[6] = (bytes[6]! & 0x0f) | 0x40
  bytes[8] = (bytes[8]! & 0x3f) | 0x80
  const hex = bytes.toString('hex')
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}
