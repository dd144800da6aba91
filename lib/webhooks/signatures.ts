import { createHmac, randomBytes } from 'node:crypto'

/** A signing secret's prefix, as the Standard Webhooks specification writes secrets. */
const PREFIX = 'whsec_'
/** A secret's length in bytes: 24 to 64, the specification says; 32, as HMAC-SHA256's key. */
const SECRET_BYTES = 32

/** What a signing secret looks like: `whsec_` and its bytes in base64. */
export const SECRET_PATTERN = '^whsec_[A-Za-z0-9+/]{43}=$'

/** A new signing secret. */
export function newSecret (): string {
  return PREFIX + randomBytes(SECRET_BYTES).toString('base64')
}

/**
 * The `webhook-signature` header of a message, by the Standard Webhooks specification:
 * `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` under each secret (the current
 * one, and the one it replaced while both sign), space-separated.
 */
export function signature (secrets: readonly string[], id: string, timestamp: number, body: string): string {
  const signed = `${id}.${timestamp}.${body}`
  return secrets.map(secret => {
    const key = Buffer.from(secret.slice(PREFIX.length), 'base64')
    return `v1,${createHmac('sha256', key).update(signed).digest('base64')}`
  }).join(' ')
}
