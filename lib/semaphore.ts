/** The error of a run whose task was skipped: by its turn, nobody wanted it any more. */
export class TurnSkipped extends Error {
  override name = 'TurnSkipped'
}

/** Runs at most `size` tasks at once; the others wait their turn, first come, first served. */
export class Semaphore {
  #free: number
  readonly #waiting: (() => void)[] = []

  constructor (size: number) {
    this.#free = size
  }

  /**
   * Runs `task` once a slot is free. `unwanted`, asked when the turn comes, passes the turn on
   * instead (the run rejects with TurnSkipped): a task queued for a request that was answered
   * or dropped meanwhile should not take the place of one still waited for.
   */
  async run<T> (task: () => Promise<T>, unwanted?: () => boolean): Promise<T> {
    if (this.#free > 0) this.#free--
    else await new Promise<void>(resolve => this.#waiting.push(resolve))
    try {
      if (unwanted?.()) throw new TurnSkipped()
      return await task()
    } finally {
      // The slot passes straight to the next in line, if any.
      const next = this.#waiting.shift()
      if (next) next()
      else this.#free++
    }
  }
}
