/** Runs at most `size` tasks at once; the others wait their turn, first come, first served. */
export class Semaphore {
  #free: number
  readonly #waiting: (() => void)[] = []

  constructor (size: number) {
    this.#free = size
  }

  async run<T> (task: () => Promise<T>): Promise<T> {
    if (this.#free > 0) this.#free--
    else await new Promise<void>(resolve => this.#waiting.push(resolve))
    try {
      return await task()
    } finally {
      // The slot passes straight to the next in line, if any.
      const next = this.#waiting.shift()
      if (next) next()
      else this.#free++
    }
  }
}
