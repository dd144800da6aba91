/** How often a last use is written, at most. */
const WRITE_EVERY_MS = 60_000

/**
 * The last use of sessions and of API keys: written at most once a minute per id and
 * instance, beside the request, which does not wait for it. Remembers as many ids as the
 * caller cache holds, forgetting the oldest: an id written again a minute early costs one
 * UPDATE.
 */
export class LastUse {
  // When each id's last use was last written by this instance, the oldest first.
  readonly #written = new Map<number, number>()

  constructor (
    private readonly capacity: number,
    /** The UPDATE, which should itself skip a row written less than a minute ago. */
    private readonly write: (id: number) => Promise<unknown>
  ) {}

  /** Notes a use now: the write's promise if one is due (its failure is for the caller to log). */
  note (id: number, now = Date.now()): Promise<void> | undefined {
    const last = this.#written.get(id)
    if (last !== undefined && now - last < WRITE_EVERY_MS) return undefined
    this.#written.delete(id)
    this.#written.set(id, now)
    if (this.#written.size > this.capacity) this.#written.delete(this.#written.keys().next().value!)
    return this.write(id).then(() => undefined)
  }
}
