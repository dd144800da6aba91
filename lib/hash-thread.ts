import { parentPort } from 'node:worker_threads'
import { hashSync, verifySync } from '@node-rs/argon2'
import type { HashJob, HashReply } from './hash-threads.js'

// One thread of lib/hash-threads.ts: its jobs, one at a time.
parentPort!.on('message', (job: HashJob) => {
  let reply: HashReply
  try {
    reply = { value: job.op === 'hash' ? hashSync(job.password, job.options) : verifySync(job.hash, job.password) }
  } catch (error) {
    reply = { error: (error as Error).message }
  }
  parentPort!.postMessage(reply)
})
