// The bare argon2id verify rate, with the service's parameters: `parallel` verifications at
// once for `seconds`, on libuv's pool (UV_THREADPOOL_SIZE, read when the pool starts, sizes
// it). Run as a child of bench/run.ts, so that each pool size gets a process of its own;
// prints verifications a second.
import { hash, verify } from '@node-rs/argon2'
import { ARGON2_OPTIONS } from '../lib/auth/argon2-options.js'

const [parallel, seconds] = process.argv.slice(2).map(Number) as [number, number]
const password = 'a benchmark password'
const stored = await hash(password, ARGON2_OPTIONS)
let verified = 0
const until = Date.now() + seconds * 1000
await Promise.all(Array.from({ length: parallel }, async () => {
  while (Date.now() < until) {
    await verify(stored, password)
    verified++
  }
}))
console.log(verified / seconds)
