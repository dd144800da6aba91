import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type { Options } from '@node-rs/argon2'
import pLimit, { type LimitFunction } from 'p-limit'

type HashJob = { op: 'hash', password: string, options: Options } | { op: 'verify', hash: string, password: string }
type HashReply = { value: string | boolean, seconds: number } | { error: string }
/** What a thread did: a hash, or the check of a password against one. */
export type HashOperation = HashJob['op']

/**
 * What each thread runs: its jobs, one at a time. Plain JavaScript, given as source, so that
 * a thread starts the same under the built server, the tests and `npm run dev`, whatever
 * loader runs the TypeScript of the main thread.
 */
const THREAD = `
  const { parentPort, workerData } = require('node:worker_threads')
  const { hashSync, verifySync } = require(workerData.argon2)
  parentPort.on('message', job => {
    let reply
    try {
      const start = performance.now()
      const value = job.op === 'hash' ? hashSync(job.password, job.options) : verifySync(job.hash, job.password)
      reply = { value, seconds: (performance.now() - start) / 1000 }
    } catch (error) {
      reply = { error: error.message }
    }
    parentPort.postMessage(reply)
  })`
const ARGON2 = createRequire(import.meta.url).resolve('@node-rs/argon2')

/** The job a thread runs and the next, ready for it. */
const JOBS_A_THREAD = 2

interface Job {
  op: HashOperation
  resolve: (value: string | boolean) => void
  reject: (error: Error) => void
}

/**
 * Threads of their own for argon2id, each running one hash at a time; more jobs wait their
 * turn. @node-rs/argon2's asynchronous calls run on libuv's pool of four threads, where
 * hashes verified fewer a second, each hash's 19 MiB going to whichever thread took it, and
 * handing a hash over held the main thread far longer (docs/performance.md). libuv's pool
 * also stays free for what else uses it (DNS lookups, files).
 *
 * Each thread holds its next job besides the one it runs, so that it starts that job as soon
 * as it is done, not once the main thread, busy with requests, has heard of it and sent
 * another. A job is sent to the thread with the fewest, after a new thread while
 * there may be more; so with fewer jobs than threads none waits behind another.
 *
 * Threads start with the first jobs that need them. One that exits (it should not) fails the
 * jobs it held; the next job starts another.
 */
export class HashThreads {
  readonly #held = new Map<Worker, Job[]>()
  readonly #turns: LimitFunction
  #closed = false
  /** Told how long each job took on its thread, for the metrics. */
  onTimed: ((op: HashOperation, seconds: number) => void) | undefined

  private readonly size: number

  constructor (size: number) {
    this.size = size
    this.#turns = pLimit(size * JOBS_A_THREAD)
  }

  hash (password: string, options: Options): Promise<string> {
    return this.#turns(() => this.#send({ op: 'hash', password, options })) as Promise<string>
  }

  /**
   * Or, if `unwanted` says so when its turn comes, undefined with nothing hashed. Its turn
   * comes when it is sent to a thread, at most one hash before the thread starts it.
   */
  verify (hash: string, password: string, unwanted: () => boolean): Promise<boolean | undefined> {
    // A job queued for a request that was answered or dropped meanwhile passes its turn on.
    return this.#turns(() => unwanted() ? undefined : this.#send({ op: 'verify', hash, password })) as Promise<boolean | undefined>
  }

  /** Ends every thread; a job they held fails, and so does any job asked for afterwards. */
  async close (): Promise<void> {
    this.#closed = true
    this.#turns.clearQueue()
    await Promise.all([...this.#held.keys()].map(thread => thread.terminate()))
  }

  /** Jobs waiting for their turn: not yet sent to a thread. */
  get waiting (): number {
    return this.#turns.pendingCount
  }

  /** The threads started and not ended. */
  get threads (): number {
    return this.#held.size
  }

  #spawn (): Worker {
    const thread = new Worker(THREAD, { eval: true, workerData: { argon2: ARGON2 } })
    let failure: Error | undefined
    thread.on('error', error => { failure = error })
    const held: Job[] = []
    this.#held.set(thread, held)
    thread.on('message', (reply: HashReply) => {
      const job = held.shift()!
      if (held.length === 0) thread.unref()
      if ('error' in reply) {
        job.reject(new Error(reply.error))
      } else {
        this.onTimed?.(job.op, reply.seconds)
        job.resolve(reply.value)
      }
    })
    thread.on('exit', code => {
      this.#held.delete(thread)
      for (const job of held.splice(0)) job.reject(failure ?? new Error(`The hashing thread exited with code ${code}`))
    })
    // Only a thread at work keeps the process alive.
    thread.unref()
    return thread
  }

  // p-limit lets no more jobs in than `size` threads hold.
  #send (job: HashJob): Promise<string | boolean> {
    if (this.#closed) return Promise.reject(new Error('The hashing threads are closed'))
    let thread: Worker | undefined
    let fewest = Infinity
    for (const [candidate, held] of this.#held) {
      if (held.length < fewest) [thread, fewest] = [candidate, held.length]
    }
    if (thread === undefined || (fewest > 0 && this.#held.size < this.size)) thread = this.#spawn()
    const held = this.#held.get(thread)!
    return new Promise((resolve, reject) => {
      held.push({ op: job.op, resolve, reject })
      thread.ref()
      thread.postMessage(job)
    })
  }
}
