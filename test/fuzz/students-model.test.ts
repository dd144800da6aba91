import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { build } from '../helper.js'
import { variants } from '../routes/students/fixtures.js'
import { fuzzRuns } from './runs.js'

interface Fields { name: string, email: string, age: number, dob: string }
type Model = Map<number, Fields>
interface Real { app: FastifyInstance }

const fields = fc.record({
  name: fc.constantFrom('Ada', 'Grace', 'Alan', 'Edsger'),
  // Few addresses, in two cases: conflicts happen.
  email: fc.constantFrom('a@example.com', 'b@example.com', 'c@example.com', 'A@EXAMPLE.COM', 'd@example.com'),
  age: fc.integer({ min: 0, max: 150 }),
  dob: fc.constantFrom('1815-12-10', '1906-12-09', '2000-02-29')
})
const variant = fc.constantFrom(...variants.map(v => v.base))
/** An id the model holds (by index) or one it does not. */
const idPick = fc.oneof(fc.nat(), fc.constant(-1))

const pick = (model: Model, n: number) => {
  const ids = [...model.keys()]
  return n < 0 || ids.length === 0 ? 999_999 : ids[n % ids.length]!
}
const emailTaken = (model: Model, email: string, except?: number) =>
  [...model].some(([id, s]) => id !== except && s.email.toLowerCase() === email.toLowerCase())

function expectStatus (actual: number, expected: number, what: string) {
  if (actual !== expected) throw new Error(`${what}: ${actual}, expected ${expected}`)
}

class Create implements fc.AsyncCommand<Model, Real> {
  readonly base: string
  readonly student: Fields
  constructor (base: string, student: Fields) {
    this.base = base
    this.student = student
  }

  check () { return true }
  async run (model: Model, { app }: Real) {
    const res = await app.inject({ method: 'POST', url: this.base, payload: this.student })
    if (emailTaken(model, this.student.email)) return expectStatus(res.statusCode, 409, this.toString())
    expectStatus(res.statusCode, 201, this.toString())
    model.set(res.json().id, { ...this.student })
  }

  toString () { return `POST ${this.base} ${JSON.stringify(this.student)}` }
}

class Read implements fc.AsyncCommand<Model, Real> {
  readonly base: string
  readonly n: number
  constructor (base: string, n: number) {
    this.base = base
    this.n = n
  }

  check () { return true }
  async run (model: Model, { app }: Real) {
    const id = pick(model, this.n)
    const res = await app.inject({ url: `${this.base}/${id}` })
    const expected = model.get(id)
    if (!expected) return expectStatus(res.statusCode, 404, this.toString())
    expectStatus(res.statusCode, 200, this.toString())
    const { name, email, age, dob } = res.json()
    if (JSON.stringify({ name, email, age, dob }) !== JSON.stringify(expected)) throw new Error(`GET ${id}: ${res.body}`)
  }

  toString () { return `GET ${this.base}/#${this.n}` }
}

class Update implements fc.AsyncCommand<Model, Real> {
  readonly base: string
  readonly n: number
  readonly method: 'PUT' | 'PATCH'
  readonly changes: Partial<Fields>
  constructor (base: string, n: number, method: 'PUT' | 'PATCH', changes: Partial<Fields>) {
    this.base = base
    this.n = n
    this.method = method
    this.changes = changes
  }

  check () { return true }
  async run (model: Model, { app }: Real) {
    const id = pick(model, this.n)
    // Variant A updates the name only; variant B any non-empty subset.
    const changes = this.base === '/api/v1/students' ? { name: this.changes.name ?? 'Renamed' } : this.changes
    const method = this.base === '/api/v1/students' ? 'PUT' : this.method
    const res = await app.inject({ method, url: `${this.base}/${id}`, payload: changes })
    const current = model.get(id)
    if (Object.keys(changes).length === 0) return expectStatus(res.statusCode, 400, this.toString())
    if (!current) return expectStatus(res.statusCode, 404, this.toString())
    if (changes.email !== undefined && emailTaken(model, changes.email, id)) return expectStatus(res.statusCode, 409, this.toString())
    expectStatus(res.statusCode, 200, this.toString())
    model.set(id, { ...current, ...changes })
  }

  toString () { return `${this.method} ${this.base}/#${this.n} ${JSON.stringify(this.changes)}` }
}

class Delete implements fc.AsyncCommand<Model, Real> {
  readonly base: string
  readonly n: number
  constructor (base: string, n: number) {
    this.base = base
    this.n = n
  }

  check () { return true }
  async run (model: Model, { app }: Real) {
    const id = pick(model, this.n)
    const res = await app.inject({ method: 'DELETE', url: `${this.base}/${id}` })
    expectStatus(res.statusCode, model.has(id) ? 204 : 404, this.toString())
    model.delete(id)
  }

  toString () { return `DELETE ${this.base}/#${this.n}` }
}

t.test('random sequences of writes and reads through both variants keep the database equal to a model', async t => {
  const app = await build(t)
  const commands = fc.commands([
    fc.tuple(variant, fields).map(([base, student]) => new Create(base, student)),
    fc.tuple(variant, idPick).map(([base, n]) => new Read(base, n)),
    fc.tuple(variant, idPick, fc.constantFrom('PUT' as const, 'PATCH' as const), fields.chain(f => fc.subarray(Object.keys(f) as (keyof Fields)[]).map(keys => Object.fromEntries(keys.map(k => [k, f[k]])))))
      .map(([base, n, method, changes]) => new Update(base, n, method, changes)),
    fc.tuple(variant, idPick).map(([base, n]) => new Delete(base, n))
  ], { maxCommands: 25 })

  let runs = 0
  await fc.assert(fc.asyncProperty(commands, async cmds => {
    await app.knex.raw('truncate students restart identity')
    const model: Model = new Map()
    await fc.asyncModelRun(() => ({ model, real: { app } }), cmds)
    // Nothing lost, nothing extra.
    const rows = await app.knex('students').select('id', 'name', 'email', 'age', 'dob').orderBy('id')
    const expected = [...model].sort(([a], [b]) => a - b).map(([id, s]) => ({ id, ...s }))
    if (JSON.stringify(rows) !== JSON.stringify(expected)) throw new Error(`database ${JSON.stringify(rows)} ≠ model ${JSON.stringify(expected)}`)
    runs++
  }), { numRuns: fuzzRuns(60) })
  t.equal(runs, fuzzRuns(60))
})
