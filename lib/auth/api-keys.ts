import { createHash, randomBytes } from 'node:crypto'

/**
 * API keys: `sk_` and 32 random bytes in base64url (46 characters in all), kept in the
 * database only as their SHA-256. The prefix tells a key from an access token (a JWT) at a
 * glance, in a header and in a secret scanner's rules.
 */
export const API_KEY_PATTERN = 'sk_[A-Za-z0-9_-]{43}'

/** A new key's secret. */
export const newApiKey = (): string => `sk_${randomBytes(32).toString('base64url')}`

/** What the database keeps of a key, in hex (the prepared statements' parameters are text). */
export const apiKeyHash = (key: string): string => createHash('sha256').update(key).digest('hex')

/** The part of a key a list shows: `sk_` and its first 8 characters. */
export const apiKeyPrefix = (key: string): string => key.slice(0, 11)
