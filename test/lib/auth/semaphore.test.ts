import t from 'tap'
import { Semaphore } from '../../../lib/auth/semaphore.js'

/** A task that runs until released, recording that it started. */
function gate (started: string[], name: string) {
  let release!: (value: string) => void
  let fail!: (error: Error) => void
  const done = new Promise<string>((resolve, reject) => { release = resolve; fail = reject })
  return { task: () => { started.push(name); return done }, release: () => release(name), fail: () => fail(new Error(name)) }
}

const settle = () => new Promise(resolve => setImmediate(resolve))

t.test('at most `size` tasks at once, the others in turn as slots free, a failure freeing its slot too', async t => {
  const semaphore = new Semaphore(2)
  const started: string[] = []
  const gates = ['a', 'b', 'c', 'd', 'e'].map(name => gate(started, name))
  const results = gates.map(g => semaphore.run(g.task))
  await settle()
  t.same(started, ['a', 'b'], 'two at once')

  gates[1]!.release()
  t.equal(await results[1], 'b')
  await settle()
  t.same(started, ['a', 'b', 'c'], 'the first in line takes the freed slot')

  gates[0]!.fail()
  await t.rejects(results[0]!, /a/, 'a failure reaches the caller')
  await settle()
  t.same(started, ['a', 'b', 'c', 'd'], 'and frees its slot')

  for (const g of gates.slice(2)) g.release()
  t.same(await Promise.all(results.slice(2)), ['c', 'd', 'e'])

  const later = gate(started, 'f')
  const run = semaphore.run(later.task)
  await settle()
  t.equal(started.at(-1), 'f', 'all slots free again: a new task starts at once')
  later.release()
  await run
})

t.test('a task unwanted by its turn is not run, and its slot passes on', async t => {
  const semaphore = new Semaphore(1)
  const started: string[] = []
  const [a, b, c] = ['a', 'b', 'c'].map(name => gate(started, name)) as [ReturnType<typeof gate>, ReturnType<typeof gate>, ReturnType<typeof gate>]
  let bWanted = true
  const runs = [semaphore.run(a.task), semaphore.run(b.task, () => !bWanted), semaphore.run(c.task, () => false)]
  await settle()
  bWanted = false
  a.release()
  t.equal(await runs[1], undefined, 'b resolves to nothing, never started')
  await settle()
  t.same(started, ['a', 'c'], 'c runs in its place')
  c.release()
  t.same(await Promise.all([runs[0], runs[2]]), ['a', 'c'])
})
