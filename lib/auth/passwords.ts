import os from 'node:os'
import { SpanKind } from '@opentelemetry/api'
import { activeTrace, inSpan } from '../tracing/active-trace.js'
import { ARGON2_OPTIONS, type Argon2Options } from './argon2-options.js'
import { HashThreads, type HashOperation } from './hash-threads.js'
import { InvalidFields } from '../http/invalid-fields.js'

/**
 * Password hashing with argon2id, on threads of its own (lib/auth/hash-threads.ts): one hash
 * at once per core, since more at once verified fewer a second, each holding its 19 MiB
 * (docs/performance.md). `close` ends the threads.
 */
export class Passwords {
  readonly #threads = new HashThreads(os.availableParallelism())
  #dummy: Promise<string> | undefined

  /** The cost of the hashes it makes; a hash it checks carries its own. */
  readonly options: Argon2Options

  constructor (options: Argon2Options = ARGON2_OPTIONS) {
    this.options = options
  }

  /**
   * Hashes the stand-in that a login for an unknown address is checked against, so that the
   * first such login costs one hash like the others.
   */
  prepare (): Promise<string> {
    this.#dummy ??= this.hash('no user has this password')
    return this.#dummy
  }

  /** In a traced request, in an INTERNAL span `passwords.hash`: the time a hash takes shows apart from the SQL's. */
  hash (password: string): Promise<string> {
    const active = activeTrace.getStore()
    if (active === undefined) return this.#threads.hash(password, this.options)
    return inSpan(active, 'passwords.hash', SpanKind.INTERNAL, {}, () => this.#threads.hash(password, this.options))
  }

  /**
   * Whether the password matches the hash; with no hash (no user has the address), the same
   * work for a certain no, so that the answer's timing tells nothing. Undefined, with nothing
   * hashed, when `unwanted` says at its turn to hash that nobody waits for the answer any more.
   * In a traced request, in an INTERNAL span `passwords.verify`.
   */
  verify (hashed: string | undefined, password: string, unwanted: () => boolean): Promise<boolean | undefined> {
    const active = activeTrace.getStore()
    if (active === undefined) return this.#verify(hashed, password, unwanted)
    return inSpan(active, 'passwords.verify', SpanKind.INTERNAL, {}, () => this.#verify(hashed, password, unwanted))
  }

  async #verify (hashed: string | undefined, password: string, unwanted: () => boolean): Promise<boolean | undefined> {
    const against = hashed ?? await this.prepare()
    const matches = await this.#threads.verify(against, password, unwanted)
    if (matches === undefined) return undefined
    return hashed !== undefined && matches
  }

  /** Hashes and checks waiting for a thread. */
  get waiting (): number {
    return this.#threads.waiting
  }

  /** Tells `listener` how long each hash and check took on its thread. */
  onTimed (listener: (op: HashOperation, seconds: number) => void): void {
    this.#threads.onTimed = listener
  }

  /** The hashing threads running. */
  get threads (): number {
    return this.#threads.threads
  }

  close (): Promise<void> {
    return this.#threads.close()
  }
}

/** The password to store, once `c_password` is seen to repeat it (else 400). */
export function confirmedPassword (password: string, confirmation: string | undefined): string {
  if (confirmation !== password) throw new InvalidFields({ c_password: ['must equal password'] })
  return password
}
