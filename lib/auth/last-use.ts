import { BoundedFifo } from './bounded-fifo.js'

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
  readonly #lastWritten: BoundedFifo<number>

  /** The UPDATE, which should itself skip a row written less than a minute ago. */
  private readonly write: (id: number) => Promise<unknown>

  constructor (capacity: number, write: (id: number) => Promise<unknown>) {
    this.write = write
    this.#lastWritten = new BoundedFifo(capacity)
  }

  /** Notes a use now: the write's promise if one is due (its failure is for the caller to log). */
  note (id: number, now = Date.now()): Promise<void> | undefined {
    const last = this.#lastWritten.get(id)
    if (last !== undefined && now - last < WRITE_EVERY_MS) return undefined
    // Deleted first, so that it goes to the back of the queue.
    this.#lastWritten.delete(id)
    this.#lastWritten.set(id, now)
    return this.write(id).then(() => undefined)
  }
}
