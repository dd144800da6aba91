import t from 'tap'
import { once } from 'node:events'
import { Worker } from 'node:worker_threads'
import { HashThreads } from '../../../lib/auth/hash-threads.js'

// Cheap parameters: these tests are about the threads, not the hash.
const OPTIONS = { memoryCost: 1024, timeCost: 1 }

/** The thread the next job goes to, once it is sent; `instead` runs in place of sending it. */
function nextThread (instead?: (thread: Worker) => void): Promise<Worker> {
  const send = Worker.prototype.postMessage
  return new Promise(resolve => {
    Worker.prototype.postMessage = function (this: Worker, message: unknown) {
      Worker.prototype.postMessage = send
      resolve(this)
      if (instead) instead(this)
      else send.call(this, message)
    }
  })
}

t.test('hashes and verifies, more jobs than threads in turn', async t => {
  const threads = new HashThreads(2)
  const hashes = await Promise.all(['a', 'b', 'c', 'd', 'e'].map(password => threads.hash(password, OPTIONS)))
  t.ok(hashes.every(hash => hash.startsWith('$argon2id$')), 'argon2id')
  t.same(await Promise.all(hashes.map(hash => threads.verify(hash, 'c', () => false))), [false, false, true, false, false])
  await t.rejects(threads.verify('not a hash', 'c', () => false), 'a malformed hash fails')
  t.equal(await threads.verify(hashes[0]!, 'a', () => true), undefined, 'nothing hashed for nobody')
})

t.test('a thread that exits fails its job, and the next job has a thread again', async t => {
  const threads = new HashThreads(1)
  const hash = await threads.hash('a', OPTIONS)

  const dying = nextThread(thread => { void thread.terminate() })
  await t.rejects(threads.verify(hash, 'a', () => false), /The hashing thread exited with code 1/, 'exited at work')
  await dying
  t.equal(await threads.verify(hash, 'a', () => false), true, 'on a new thread')

  const crashing = nextThread(thread => { thread.emit('error', new Error('out of memory')); void thread.terminate() })
  await t.rejects(threads.verify(hash, 'a', () => false), /out of memory/, 'with the error it reported')
  await crashing
  t.equal(await threads.verify(hash, 'a', () => false), true)

  const idle = nextThread()
  t.equal(await threads.verify(hash, 'a', () => false), true)
  const thread = await idle
  await Promise.all([once(thread, 'exit'), thread.terminate()])
  t.equal(await threads.verify(hash, 'a', () => false), true, 'not sent to the thread that exited while idle')
})

t.test('each thread holds its next job: a job is sent before the one ahead of it is done, and to an idle thread first', async t => {
  const threads = new HashThreads(2)
  const hash = await threads.hash('a', OPTIONS)
  const send = Worker.prototype.postMessage
  const sentTo: Worker[] = []
  Worker.prototype.postMessage = function (this: Worker, message: unknown) {
    sentTo.push(this)
    send.call(this, message)
  }
  t.teardown(() => { Worker.prototype.postMessage = send })

  const jobs = Array.from({ length: 5 }, () => threads.verify(hash, 'a', () => false))
  // p-limit starts a job some microtasks on; no thread's answer can arrive before a macrotask.
  for (let i = 0; i < 1000 && sentTo.length < 4; i++) await Promise.resolve()
  t.equal(sentTo.length, 4, 'two jobs a thread, sent at once, before any is done')
  t.equal(new Set(sentTo.slice(0, 2)).size, 2, 'the first two to two threads')
  t.equal(new Set(sentTo).size, 2, 'two threads in all')
  t.same(await Promise.all(jobs), [true, true, true, true, true])
  t.equal(sentTo.length, 5, 'the fifth once a thread was done with one')
})

t.test('closed: the threads end, and a job asked for afterwards fails', async t => {
  const threads = new HashThreads(2)
  await threads.hash('a', OPTIONS)
  t.equal(threads.threads, 1)
  await threads.close()
  t.equal(threads.threads, 0, 'none left')
  await t.rejects(threads.hash('b', OPTIONS), /The hashing threads are closed/)
  t.equal(threads.threads, 0, 'none started')
})
