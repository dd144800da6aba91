/** Runs at most `size` tasks at once; the others wait their turn, first come, first served. */
export class Semaphore {
  #free: number
  readonly #waiting: (() => void)[] = []

  constructor (size: number) {
    this.#free = size
  }

  /** Runs `task` once a slot is free. */
  run<T> (task: () => Promise<T>): Promise<T>
  /**
   * Or, if `unwanted` says so when the turn comes, passes the turn on and resolves to
   * undefined: a task queued for a request that was answered or dropped meanwhile should not
   * take the place of one still waited for.
   */
  run<T> (task: () => Promise<T>, unwanted: () => boolean): Promise<T | undefined>
  async run<T> (task: () => Promise<T>, unwanted?: () => boolean): Promise<T | undefined> {
    if (this.#free > 0) this.#free--
    else await new Promise<void>(resolve => this.#waiting.push(resolve))
    try {
      if (unwanted?.()) return undefined
      return await task()
    } finally {
      // The slot passes straight to the next in line, if any.
      const next = this.#waiting.shift()
      if (next) next()
      else this.#free++
    }
  }
}
