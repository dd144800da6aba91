import { BoundedFifo } from './bounded-fifo.js'

/**
 * Tokens whose signature and claims were verified, with their claims, until they expire: a
 * token's later requests skip the HMAC and the decoding (docs/performance.md). Keyed by the
 * token's text, so a hit is the very token verified before. fast-jwt's own cache could not
 * serve: keyed by a SHA-256 of the token it saved nothing, keyed by the token it warns.
 * toad-cache's FifoMap, not a Map evicting its first key: under a flood of new tokens that
 * eviction walks the deleted entries a Map keeps until it rehashes (docs/performance.md,
 * "Libraries").
 */
export class VerifiedTokens<Claims extends { exp: number }> {
  readonly #entries: BoundedFifo<Claims>

  /** `capacity` tokens at the most, the oldest forgotten first; 0 keeps none. */
  constructor (capacity: number) {
    this.#entries = new BoundedFifo(capacity)
  }

  /** The claims of `token`: remembered while unexpired, else from `verify`, which throws on a bad token. */
  claims (token: string, verify: (token: string) => Claims, now = Date.now()): Claims {
    const known = this.#entries.get(token)
    if (known !== undefined && known.exp * 1000 > now) return known
    this.#entries.delete(token)
    const claims = verify(token)
    this.#entries.set(token, claims)
    return claims
  }
}
