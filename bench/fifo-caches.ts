/**
 * The first-in-first-out caches under a flood of new keys: toad-cache's FifoMap, which the
 * service's four use, and the caller cache that every authenticated request reads, against a
 * Map that evicts its first key (`map.keys().next()`, as they were written before), in the
 * same run: `npm run bench:caches`. What a hit costs (a known token's request) and what a
 * miss and its insertion cost once the cache is full (a new token's), in ns an operation.
 */
import { FifoMap } from 'toad-cache'
import { CallerCache, type CachedCaller } from '../lib/auth/caller-cache.js'

const CAPACITY = 10_000
const ROUNDS = 5
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

const caller = (i: number): CachedCaller => ({ userId: i, sessionId: i, permissions: new Set() })

function callerCache (): Cache {
  const cache = new CallerCache(CAPACITY)
  cache.enable()
  return { get: key => cache.get(key), set: (key, value) => cache.set(key, value, cache.version) }
}

/** ns per hit on a full cache, and per miss and insertion of keys it never saw. */
function measure (make: () => Cache): { hit: number, churn: number } {
  const cache = make()
  for (let i = 0; i < CAPACITY; i++) cache.set(keys[i]!, caller(i))
  let started = process.hrtime.bigint()
  for (let round = 0; round < 100; round++) for (let i = 0; i < CAPACITY; i++) cache.get(keys[i]!)
  const hit = Number(process.hrtime.bigint() - started) / (100 * CAPACITY)
  started = process.hrtime.bigint()
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 2 * CAPACITY; i++) if (cache.get(keys[i]!) === undefined) cache.set(keys[i]!, caller(i))
  }
  return { hit, churn: Number(process.hrtime.bigint() - started) / (10 * 2 * CAPACITY) }
}

const targets: Record<string, () => Cache> = {
  'a Map evicting its first key': () => { const map = new FirstKeyMap<CachedCaller>(); return { get: key => map.get(key), set: (key, value) => map.set(key, value) } },
  'toad-cache FifoMap': () => { const map = new FifoMap<CachedCaller>(CAPACITY); return { get: key => map.get(key), set: (key, value) => map.set(key, value) } },
  CallerCache: callerCache
}

const medians: Record<string, { hit: number, churn: number }> = {}
const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!
const runs = Object.fromEntries(Object.keys(targets).map(name => [name, [] as { hit: number, churn: number }[]]))
// The targets take turns, round after round, so that the machine's drift touches all alike.
for (let round = 0; round < ROUNDS; round++) for (const [name, make] of Object.entries(targets)) runs[name]!.push(measure(make))
for (const [name, results] of Object.entries(runs)) medians[name] = { hit: median(results.map(r => r.hit)), churn: median(results.map(r => r.churn)) }
const baseline = medians['a Map evicting its first key']!
console.log(`capacity ${CAPACITY}, medians of ${ROUNDS} rounds, ns an operation`)
for (const [name, { hit, churn }] of Object.entries(medians)) {
  console.log(`${name.padEnd(30)} hit ${hit.toFixed(1).padStart(7)}  miss and insertion ${churn.toFixed(1).padStart(8)}  (÷ the Map's: ${(hit / baseline.hit).toFixed(2)}, ${(churn / baseline.churn).toFixed(2)})`)
}
