import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { build } from '../helper.js'
import { fuzzRuns } from './runs.js'

// Random filters, sorts and page sizes over random students, checked against the same query
// evaluated in memory, following `next` links to the end.

interface Row { id: number, name: string, email: string, age: number, dob: string, created_at: string }
type Field = 'id' | 'name' | 'age' | 'dob' | 'created_at'
interface Condition { field: Field, operator: string, value: string | number | (string | number)[] }
interface Query { conditions: Condition[], sort: { field: Field, descending: boolean }[], limit: number }

// Lower-case letters only: every collation orders them as JavaScript does.
const name = fc.stringMatching(/^[a-c]{1,3}$/)
const age = fc.integer({ min: 0, max: 6 })
const dob = fc.constantFrom('1990-01-01', '1990-01-02', '2000-02-29', '2010-12-31')
// Whole milliseconds: a timestamp shown is then the one stored.
const createdAt = fc.constantFrom('2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.001Z', '2026-06-01T12:00:00.500Z')
const student = fc.record({ name, age, dob, created_at: createdAt })

const VALUES: Record<Field, fc.Arbitrary<string | number>> = { id: fc.integer({ min: 0, max: 40 }), name, age, dob, created_at: createdAt }
const condition: fc.Arbitrary<Condition> = fc.constantFrom<Field>('id', 'name', 'age', 'dob', 'created_at').chain(field => {
  const operators = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in', ...(field === 'name' ? ['contains', 'starts_with'] : [])]
  return fc.constantFrom(...operators).chain(operator => (operator === 'in'
    ? fc.array(VALUES[field], { minLength: 1, maxLength: 4 })
    : VALUES[field]).map(value => ({ field, operator, value })))
})
const query: fc.Arbitrary<Query> = fc.record({
  // One of each field and operator: a parameter given twice is an array, which validation refuses.
  conditions: fc.uniqueArray(condition, { maxLength: 3, selector: c => `${c.field}[${c.operator}]` }),
  sort: fc.uniqueArray(fc.record({ field: fc.constantFrom<Field>('name', 'age', 'dob', 'created_at', 'id'), descending: fc.boolean() }), { maxLength: 3, selector: key => key.field }),
  limit: fc.integer({ min: 1, max: 7 })
})

function compare (a: string | number, b: string | number): number {
  return a < b ? -1 : a > b ? 1 : 0
}

function matches (row: Row, { field, operator, value }: Condition): boolean {
  const actual = row[field]
  const text = (v: string | number) => String(v).toLowerCase()
  switch (operator) {
    case 'eq': return actual === value
    case 'ne': return actual !== value
    case 'gt': return compare(actual, value as string | number) > 0
    case 'gte': return compare(actual, value as string | number) >= 0
    case 'lt': return compare(actual, value as string | number) < 0
    case 'lte': return compare(actual, value as string | number) <= 0
    case 'in': return (value as (string | number)[]).includes(actual)
    case 'contains': return text(actual).includes(text(value as string))
    default: return text(actual).startsWith(text(value as string))
  }
}

/** The rows the query asks for, in its order: ties in id order, in the direction of the last key. */
function expected (rows: Row[], { conditions, sort }: Query): Row[] {
  const keys = [...sort]
  const byId = keys.findIndex(key => key.field === 'id')
  if (byId >= 0) keys.length = byId + 1
  else keys.push({ field: 'id', descending: keys.at(-1)?.descending ?? false })
  return rows.filter(row => conditions.every(c => matches(row, c))).sort((a, b) => {
    for (const { field, descending } of keys) {
      const order = compare(a[field], b[field])
      if (order !== 0) return descending ? -order : order
    }
    return 0
  })
}

function url ({ conditions, sort, limit }: Query): string {
  const params = conditions.map(({ field, operator, value }) =>
    `${field}[${operator}]=${encodeURIComponent(Array.isArray(value) ? value.join(',') : String(value))}`)
  if (sort.length > 0) params.push(`sort=${sort.map(key => (key.descending ? '-' : '') + key.field).join(',')}`)
  params.push(`limit=${limit}`)
  return `/students?${params.join('&')}`
}

async function pages (app: FastifyInstance, first: string, between?: () => Promise<void>): Promise<Row[]> {
  const rows: Row[] = []
  let next: string | undefined = first
  while (next) {
    const res: LightMyRequestResponse = await app.inject({ url: next })
    if (res.statusCode !== 200) throw new Error(`${next}: ${res.statusCode} ${res.body}`)
    rows.push(...res.json() as Row[])
    next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link ?? ''))?.[1]
    if (next && between) await between()
  }
  return rows
}

async function reset (app: FastifyInstance, students: { name: string, age: number, dob: string, created_at: string }[]): Promise<Row[]> {
  await app.knex.raw('truncate students restart identity')
  if (students.length === 0) return []
  const inserted = await app.knex('students')
    .insert(students.map((s, i) => ({ ...s, email: `s${i}@example.com` })))
    .returning('id')
  return (await app.inject({ url: `/students?limit=1000&id[in]=${inserted.map(r => r.id).join(',')}` })).json()
}

t.test('every filter, sort and page size: every row exactly once, in order', async t => {
  const app = await build(t)
  await t.resolves(fc.assert(fc.asyncProperty(fc.array(student, { maxLength: 25 }), query, async (students, q) => {
    const rows = await reset(app, students)
    const seen = await pages(app, url(q))
    const want = expected(rows, q)
    if (JSON.stringify(seen.map(r => r.id)) !== JSON.stringify(want.map(r => r.id))) {
      throw new Error(`${url(q)}: got ${seen.map(r => r.id)}, expected ${want.map(r => r.id)}`)
    }
  }), { numRuns: fuzzRuns(200) }), `${fuzzRuns(200)} random lists match the model`)
})

t.test('rows inserted and deleted between pages: none seen twice, every row that stayed seen', async t => {
  const app = await build(t)
  await t.resolves(fc.assert(fc.asyncProperty(fc.array(student, { minLength: 1, maxLength: 20 }), query, fc.array(student, { maxLength: 3 }), async (students, q, added) => {
    const rows = await reset(app, students)
    const deleted = new Set<number>()
    let turn = 0
    const seen = await pages(app, url(q), async () => {
      // Between pages: delete one row, insert another.
      const victim = rows[(turn * 7) % rows.length]!
      deleted.add(victim.id)
      await app.knex('students').where({ id: victim.id }).delete()
      // As many inserts as `added` holds: inserting ahead of the cursor on every page would never end.
      const extra = added[turn++]
      if (extra) await app.knex('students').insert({ ...extra, email: `added${turn}-${Date.now()}@example.com` })
    })
    const ids = seen.map(r => r.id)
    if (new Set(ids).size !== ids.length) throw new Error(`${url(q)}: a row seen twice: ${ids}`)
    const stayed = expected(rows, q).filter(r => !deleted.has(r.id)).map(r => r.id)
    const missing = stayed.filter(id => !ids.includes(id))
    if (missing.length > 0) throw new Error(`${url(q)}: rows that stayed were not seen: ${missing}`)
  }), { numRuns: fuzzRuns(100) }), `${fuzzRuns(100)} random lists under change keep every row that stayed, once`)
})
