import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { build, buildApp } from '../helper.js'
import { bearer, userWithRoles } from '../routes/api/accounts.js'
import { fuzzRuns } from './runs.js'

/**
 * The change feed under concurrent writers on two instances: HTTP writes of students, and
 * transactions of one to three statements that write their events with pauses between and
 * commit or roll back. Readers on both instances follow `next` meanwhile, in pages of random
 * sizes. Each must see exactly the committed events, in id order, none twice; and each
 * student's last event must tell its last committed state, so a record's events came in the
 * order its changes committed.
 */

/** A write: a student created, renamed or deleted through one instance; or a transaction of events of its own. */
type Write =
  | { kind: 'create', on: 0 | 1 }
  | { kind: 'rename', on: 0 | 1, which: number, name: string }
  | { kind: 'delete', on: 0 | 1, which: number }
  | { kind: 'transaction', statements: number, pauseMs: number, commit: boolean }

const write: fc.Arbitrary<Write> = fc.oneof(
  fc.record({ kind: fc.constant('create' as const), on: fc.constantFrom(0 as const, 1 as const) }),
  fc.record({ kind: fc.constant('rename' as const), on: fc.constantFrom(0 as const, 1 as const), which: fc.nat(), name: fc.string({ minLength: 1, maxLength: 20 }).filter(name => name.trim().length > 0) }),
  fc.record({ kind: fc.constant('delete' as const), on: fc.constantFrom(0 as const, 1 as const), which: fc.nat() }),
  fc.record({ kind: fc.constant('transaction' as const), statements: fc.integer({ min: 1, max: 3 }), pauseMs: fc.integer({ min: 0, max: 30 }), commit: fc.boolean() })
)

interface Event { id: number, type: string, resource: string, resource_id: number, data: Record<string, unknown> }

t.test('readers on two instances see every committed event once, in order, while writers on both commit out of order', async t => {
  const first = await build(t)
  const second = await buildApp(t, first.config)
  const apps: [FastifyInstance, FastifyInstance] = [first, second]
  const admin = await userWithRoles(first, ['Admin'])
  let made = 0

  /** Pages from `url` on until one comes back empty; where to go on from. */
  async function follow (app: FastifyInstance, url: string, seen: Event[], limit: () => number): Promise<string> {
    for (;;) {
      const res = await app.inject({ url: url.replace(/limit=\d+/, `limit=${limit()}`), headers: bearer(admin.token) })
      if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode} ${res.body}`)
      const events = res.json().data as Event[]
      seen.push(...events)
      url = /^<([^>]+)>; rel="next"$/.exec(res.headers.link as string)![1]!
      if (events.length === 0) return url
    }
  }

  async function perform (step: Write, students: number[]): Promise<void> {
    if (step.kind === 'transaction') {
      const trx = await first.knex.transaction()
      for (let i = 0; i < step.statements; i++) {
        await trx('change_outbox').insert({ resource: 'probe', resource_id: 1, action: 'update', data: { step: i } })
        await sleep(step.pauseMs)
      }
      await (step.commit ? trx.commit() : trx.rollback())
      return
    }
    const app = apps[step.on]
    if (step.kind === 'create') {
      const n = ++made
      const res = await app.inject({ method: 'POST', url: '/students', payload: { name: `S${n}`, email: `s${n}@example.com`, age: 20, dob: '2005-01-02' } })
      if (res.statusCode !== 201) throw new Error(`POST: ${res.statusCode} ${res.body}`)
      students.push(res.json().id)
      return
    }
    if (students.length === 0) return
    const id = students[step.which % students.length]!
    const res = step.kind === 'rename'
      ? await app.inject({ method: 'PUT', url: `/api/v1/students/${id}`, payload: { name: step.name } })
      : await app.inject({ method: 'DELETE', url: `/students/${id}` })
    if (![200, 204, 404].includes(res.statusCode)) throw new Error(`${step.kind}: ${res.statusCode} ${res.body}`)
  }

  await t.resolves(fc.assert(fc.asyncProperty(fc.array(write, { minLength: 10, maxLength: 40 }), fc.integer({ min: 2, max: 6 }), fc.infiniteStream(fc.integer({ min: 1, max: 5 })), async (writes, writers, sizes) => {
    // Both readers start after every event so far.
    const start = await follow(first, '/api/events?limit=100', [], () => 100)
    const students: number[] = []
    const queue = [...writes]
    const state = { writing: true }
    const written = Promise.all(Array.from({ length: writers }, async () => {
      for (let step = queue.shift(); step !== undefined; step = queue.shift()) await perform(step, students)
    })).finally(() => { state.writing = false })
    const sizeOf = sizes[Symbol.iterator]()
    const limit = () => sizeOf.next().value as number
    const read = apps.map(async app => {
      const seen: Event[] = []
      let url = start
      while (state.writing) url = await follow(app, url, seen, limit)
      await follow(app, url, seen, limit)
      return seen
    })
    await written
    const committed = (await first.knex('change_outbox').where('id', '>', Number(/after=(\d+)/.exec(start)![1])).orderBy('id').pluck('id')).map(Number)
    for (const seen of await Promise.all(read)) {
      const ids = seen.map(event => event.id)
      if (JSON.stringify(ids) !== JSON.stringify(committed)) throw new Error(`seen ${ids}, committed ${committed}`)
    }
    // Each student's last event tells its state now: its changes' events came in commit order.
    const [seen] = await Promise.all(read)
    for (const id of new Set(students)) {
      const last = seen!.filter(event => event.resource === 'student' && event.resource_id === id).at(-1)!
      const row = await first.knex('students').where({ id }).first('name')
      if (row === undefined ? last.type !== 'student.deleted' : last.data.name !== row.name) {
        throw new Error(`student ${id}: the last event ${JSON.stringify(last)} is not its state ${JSON.stringify(row)}`)
      }
    }
  }), { numRuns: fuzzRuns(12) }), `${fuzzRuns(12)} random runs of writers and readers`)
})
