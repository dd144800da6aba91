/**
 * Tokens whose signature and claims were verified, with their claims, until they expire: a
 * token's later requests skip the HMAC and the decoding (docs/performance.md). Keyed by the
 * token's text, so a hit is the very token verified before. fast-jwt's own cache could not
 * serve: keyed by a SHA-256 of the token it saved nothing, keyed by the token it warns.
 */
export class VerifiedTokens<Claims extends { exp: number }> {
  readonly #entries = new Map<string, Claims>()
  readonly #capacity: number

  /** `capacity` tokens at the most, the oldest forgotten first; 0 keeps none. */
  constructor (capacity: number) {
    this.#capacity = capacity
  }

  /** The claims of `token`: remembered while unexpired, else from `verify`, which throws on a bad token. */
  claims (token: string, verify: (token: string) => Claims, now = Date.now()): Claims {
    const known = this.#entries.get(token)
    if (known !== undefined && known.exp * 1000 > now) return known
    this.#entries.delete(token)
    const claims = verify(token)
    if (this.#capacity > 0) {
      if (this.#entries.size >= this.#capacity) this.#entries.delete(this.#entries.keys().next().value!)
      this.#entries.set(token, claims)
    }
    return claims
  }
}
