import type { Knex } from 'knex'
import { BoundedFifo } from './bounded-fifo.js'
import { afterCommit } from '../db/after-commit.js'
import type { RatePolicy } from '../limits/rate-policy.js'

/** What one token's check found in the database: whose it is and what they may do. */
export interface CachedCaller {
  userId: number
  /** The session the token is of; none for a token issued before sessions were. */
  sessionId?: number | undefined
  /** The API key the caller authenticated with, instead of a token. */
  keyId?: number | undefined
  /** When the key expires, seconds since the epoch; null if it does not. */
  keyExpiresAt?: number | null
  permissions: Set<string>
  /** The user's rate limit and quota, from their roles' (lib/limits/rate-policy.ts). */
  policy: RatePolicy
  /** The key's own, spent beside the user's; none for a token, or a key of none. */
  keyPolicy?: RatePolicy | undefined
  /** A role of the user needs a second factor they have not enrolled (MFA_REQUIRED_ROLES): the caller may only enrol one. */
  enrolmentOnly?: boolean
}

/**
 * The callers of recently checked tokens, by jti, so that a token's next request needs no
 * database round trip. It holds only while told of every change: the `auth_changed`
 * notifications of the database (from any instance) and, at once, this instance's own writes.
 * Disabled, it answers nothing and keeps nothing. The oldest entry goes first
 * (toad-cache's FifoMap: docs/performance.md, "Libraries"); forgetting a user's, a session's
 * or a key's walks its `items`, which the typings show but the README does not, so package.json
 * holds toad-cache to 3.7.x.
 */
export class CallerCache {
  readonly #entries: BoundedFifo<CachedCaller>
  #version = 0
  #enabled = false
  #hits = 0
  #misses = 0

  constructor (capacity: number) {
    this.#entries = new BoundedFifo(capacity)
  }

  /** Moves on with every change; read it before a lookup and hand it to `set`. */
  get version (): number {
    return this.#version
  }

  get enabled (): boolean {
    return this.#enabled
  }

  get size (): number {
    return this.#entries.size
  }

  /** Lookups answered from the cache, and lookups that found nothing, since it was made. */
  get hits (): number {
    return this.#hits
  }

  get misses (): number {
    return this.#misses
  }

  get (jti: string): CachedCaller | undefined {
    const caller = this.#entries.get(jti)
    if (caller === undefined) this.#misses++
    else this.#hits++
    return caller
  }

  /** Keeps what a lookup found, unless something changed since `version` was read. */
  set (jti: string, caller: CachedCaller, version: number): void {
    if (!this.#enabled || version !== this.#version) return
    this.#entries.set(jti, caller)
  }

  /** Starts keeping callers: only while every change is heard of. */
  enable (): void {
    this.clear()
    this.#enabled = true
  }

  /** Forgets everything and keeps nothing until enabled again: changes may go unheard. */
  disable (): void {
    this.#enabled = false
    this.clear()
  }

  clear (): void {
    this.#version++
    this.#entries.clear()
  }

  #forgetWhere (matches: (caller: CachedCaller) => boolean): void {
    for (const [jti, entry] of this.#entries.items) {
      if (matches(entry.value)) this.#entries.delete(jti)
    }
  }

  forgetToken (jti: string): void {
    this.#version++
    this.#entries.delete(jti)
  }

  forgetUser (userId: number): void {
    this.#version++
    this.#forgetWhere(caller => caller.userId === userId)
  }

  forgetSession (sessionId: number): void {
    this.#version++
    this.#forgetWhere(caller => caller.sessionId === sessionId)
  }

  forgetKey (keyId: number): void {
    this.#version++
    this.#forgetWhere(caller => caller.keyId === keyId)
  }

  /** Applies an `auth_changed` notification: `token:<jti>`, `user:<id>`, `session:<id>`, `key:<id>`, or anything else for all. */
  apply (payload: string): void {
    const [kind, key = ''] = payload.split(':', 2)
    if (kind === 'token') this.forgetToken(key)
    else if (kind === 'user' && /^\d+$/.test(key)) this.forgetUser(Number(key))
    else if (kind === 'session' && /^\d+$/.test(key)) this.forgetSession(Number(key))
    else if (kind === 'key' && /^\d+$/.test(key)) this.forgetKey(Number(key))
    else this.clear()
  }

  /**
   * Runs `forget` once the write made through `trx` is committed (lib/db/after-commit.ts), so
   * that this instance's next request reads the change even before the database's notification
   * arrives.
   */
  afterCommit (trx: Knex, forget: (cache: CallerCache) => void): void {
    afterCommit(trx, () => forget(this))
  }
}
