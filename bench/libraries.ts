/**
 * The service's hot-path parts against the library each could be or now is, in the same run:
 * `npm run bench:libraries`. Each pair takes turns for ROUNDS rounds and the medians are
 * printed in ns an operation (docs/performance.md, "Libraries").
 *
 * - The bounded caches under a flood of new keys: toad-cache's FifoMap, which the service's
 *   four use, and the caller cache that every authenticated request reads, against a Map that
 *   evicts its first key (`map.keys().next()`, as they were written before).
 * - The request-duration histogram (lib/process/request-durations.ts) against prom-client's
 *   Histogram, observing what a request observes: method, route template, status, seconds.
 */
import client from 'prom-client'
import { FifoMap } from 'toad-cache'
import { CallerCache, type CachedCaller } from '../lib/auth/caller-cache.js'
import { namedPolicy } from '../lib/limits/rate-policy.js'
import { RequestDurations } from '../lib/process/request-durations.js'

const ROUNDS = 5
const CAPACITY = 10_000
const keys = Array.from({ length: 2 * CAPACITY }, (_, i) => `eyJhbGciOiJIUzI1NiJ9.token-${i}.${'s'.repeat(43)}`)

/** The way the caches were written: a Map, its first key deleted when full. */
class FirstKeyMap<V> {
  readonly #entries = new Map<string, V>()
  get (key: string): V | undefined { return this.#entries.get(key) }
  set (key: string, value: V): void {
    if (this.#entries.size >= CAPACITY) this.#entries.delete(this.#entries.keys().next().value!)
    this.#entries.set(key, value)
  }
}

interface Cache { get: (key: string) => unknown, set: (key: string, value: CachedCaller) => void }
const caller = (i: number): CachedCaller => ({ userId: i, sessionId: i, permissions: new Set(), policy: namedPolicy('default', null, null) })
const nsEach = (started: bigint, operations: number) => Number(process.hrtime.bigint() - started) / operations

/** ns per hit on a full cache, and per miss and insertion of keys it never saw. */
function measureCache (make: () => Cache): Record<string, number> {
  const cache = make()
  for (let i = 0; i < CAPACITY; i++) cache.set(keys[i]!, caller(i))
  let started = process.hrtime.bigint()
  for (let round = 0; round < 100; round++) for (let i = 0; i < CAPACITY; i++) cache.get(keys[i]!)
  const hit = nsEach(started, 100 * CAPACITY)
  started = process.hrtime.bigint()
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 2 * CAPACITY; i++) if (cache.get(keys[i]!) === undefined) cache.set(keys[i]!, caller(i))
  }
  return { hit, 'miss and insertion': nsEach(started, 10 * 2 * CAPACITY) }
}

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30]
const ROUTES = ['/students/:id', '/students', '/api/clients/:id', '/api/clients', '/api/users/:id', '/health/ready']
const OBSERVATIONS = 1_000_000

/** ns per observation of a request's duration, over a few routes and statuses. */
function measureHistogram (observe: (method: string, route: string, status: number, seconds: number) => void): Record<string, number> {
  const started = process.hrtime.bigint()
  for (let i = 0; i < OBSERVATIONS; i++) observe(i % 7 === 0 ? 'POST' : 'GET', ROUTES[i % ROUTES.length]!, i % 13 === 0 ? 404 : 200, (i % 50) / 1000)
  return { observation: nsEach(started, OBSERVATIONS) }
}

const targets: Record<string, () => Record<string, number>> = {
  'a Map evicting its first key': () => measureCache(() => { const map = new FirstKeyMap<CachedCaller>(); return { get: key => map.get(key), set: (key, value) => map.set(key, value) } }),
  'toad-cache FifoMap': () => measureCache(() => { const map = new FifoMap<CachedCaller>(CAPACITY); return { get: key => map.get(key), set: (key, value) => map.set(key, value) } }),
  'CallerCache (on FifoMap)': () => measureCache(() => {
    const cache = new CallerCache(CAPACITY)
    cache.enable()
    return { get: key => cache.get(key), set: (key, value) => cache.set(key, value, cache.version) }
  }),
  'prom-client Histogram': () => {
    const histogram = new client.Histogram({ name: 'durations', help: 'a benchmark', labelNames: ['method', 'route', 'status_code'], buckets: BUCKETS, registers: [] })
    return measureHistogram((method, route, status, seconds) => histogram.observe({ method, route, status_code: status }, seconds))
  },
  RequestDurations: () => {
    const durations = new RequestDurations('durations', 'a benchmark', BUCKETS)
    return measureHistogram((method, route, status, seconds) => durations.observe(method, route, status, seconds))
  }
}

const runs = Object.fromEntries(Object.keys(targets).map(name => [name, [] as Record<string, number>[]]))
// The targets take turns, round after round, so that the machine's drift touches all alike.
for (let round = 0; round < ROUNDS; round++) for (const [name, measure] of Object.entries(targets)) runs[name]!.push(measure())
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
console.log(`medians of ${ROUNDS} rounds, ns an operation`)
for (const [name, results] of Object.entries(runs)) {
  const figures = Object.keys(results[0]!).map(what => `${what} ${median(results.map(result => result[what]!)).toFixed(1)}`)
  console.log(`${name.padEnd(30)} ${figures.join(', ')}`)
}
