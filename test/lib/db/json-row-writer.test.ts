import t, { type Test } from 'tap'
import fc from 'fast-check'
import Fastify from 'fastify'
import knex from 'knex'
import { Type, type TObject, type TSchema } from '@sinclair/typebox'
import { jsonRows } from '../../../lib/db/json-row-writer.js'
import { SESSION_OPTIONS } from '../../../lib/db/pg-types.js'
import { prepare } from '../../../lib/db/prepared-query.js'
import { createDatabase, testPool } from '../../helper.js'

const Thing = Type.Object({
  id: Type.Integer(),
  name: Type.String(),
  label: Type.String({ format: 'email' }),
  small: Type.Integer(),
  day: Type.String({ format: 'date' }),
  at: Type.String({ format: 'date-time' })
}, { additionalProperties: false })

async function setUp (t: Test) {
  const connection = { ...await createDatabase(t), options: SESSION_OPTIONS }
  const db = { knex: knex({ client: 'pg', connection, pool: { min: 0, max: 1 } }), pool: testPool({ ...connection, max: 1 }) }
  t.teardown(async () => { await Promise.all([db.knex.destroy(), db.pool.end()]) })
  await db.knex.schema.createTable('things', table => {
    table.increments('id')
    table.text('name').notNullable()
    table.string('label', 300).notNullable()
    table.smallint('small').notNullable()
    table.date('day').notNullable()
    table.timestamp('at', { useTz: true }).notNullable()
    table.boolean('done')
  })
  return db
}

type Db = Awaited<ReturnType<typeof setUp>>

/** What Fastify's serializer writes for these rows under this schema. */
async function serialized (schema: TObject, rows: unknown[]) {
  const app = Fastify()
  app.get('/', { schema: { response: { 200: Type.Array(schema) } } }, async () => rows)
  const { body } = await app.inject('/')
  await app.close()
  return body
}

const select = (db: Db, columns: Record<string, string> | string[]) => (after: number) =>
  db.knex('things').select(columns).where('id', '>', after).orderBy('id')

t.test('rows written as JSON are what Fastify\'s serializer writes of the same rows as objects', async t => {
  const db = await setUp(t)
  const asJson = prepare<[after: number], { id: number, json: string }>(db, 'things.json', select(db, ['*']), jsonRows(Thing))
  const asObjects = prepare<[after: number], Record<string, unknown>>(db, 'things.objects', select(db, ['*']))
  const names = ['', 'a "quoted" \\ back\\slash', 'tab\tnew\nline\r\u0001\u001f\u007f', '✓ é 𝄞 😀', '</script>', '\u2028\u2029']
  const row = (name: string, i: number) => ({ name, label: `${i}@example.com`, small: i % 2 ? -32768 : 32767, day: i % 2 ? '0044-03-15 BC' : '2024-02-29', at: i % 2 ? '2026-11-22T09:30:00Z' : '2026-11-22T09:30:00.123456Z' })
  await db.knex('things').insert(names.map(row))

  const check = async (after: number) => {
    const { rows } = await asJson([after])
    const objects = (await asObjects([after])).rows
    t.equal(`[${rows.map(row => row.json).join(',')}]`, await serialized(Thing, objects))
    t.strictSame(rows.map(row => row.id), objects.map(row => row.id), 'each with its id')
  }
  await check(0)
  // Any text PostgreSQL stores (all of Unicode but NUL).
  await fc.assert(fc.asyncProperty(fc.string({ unit: 'binary', maxLength: 40 }).filter(s => !s.includes('\0')), async name => {
    const [{ id }] = await db.knex('things').insert(row(name, 1)).returning('id')
    await check(id - 1)
  }), { numRuns: 100 })
})

t.test('a statement whose columns do not fit the schema fails', async t => {
  const db = await setUp(t)
  await db.knex('things').insert({ name: 'a', label: 'a@example.com', small: 1, day: '2024-01-01', at: '2026-01-01T00:00:00Z' })
  const cases: [string, TObject, Record<string, string> | string[], RegExp][] = [
    ['no such column', Thing, ['id', 'name'], /The row has no column label/],
    ['no id', Type.Object({ name: Type.String() }), ['name'], /The row has no column id/],
    ['a name to quote', Type.Object({ id: Type.Integer(), 'odd name': Type.String() }), { id: 'id', 'odd name': 'name' }, /Property name "odd name" is not a plain identifier/]
  ]
  for (const [what, schema, columns, error] of cases) {
    const query = prepare<[after: number], unknown>(db, `things.${what}`, select(db, columns), jsonRows(schema))
    await t.rejects(query([0]), error, what)
  }
})

t.test('columns it does not write itself, and NULLs, are written as Fastify\'s serializer writes them', async t => {
  const db = await setUp(t)
  await db.knex.schema.alterTable('things', table => {
    table.decimal('price', 10, 2)
    table.text('note')
    table.jsonb('extra')
  })
  await db.knex('things').insert([
    { name: 'a', label: 'a@example.com', small: 1, day: '2024-01-01', at: '2026-01-01T00:00:00Z', done: true, price: '12.50', note: 'hi', extra: { a: [1, 2] } },
    { name: 'b', label: 'b@example.com', small: 2, day: '2024-01-02', at: '2026-01-02T00:00:00Z', done: null, price: null, note: null, extra: null }
  ])
  const Nullable = (schema: TSchema) => Type.Union([schema, Type.Null()])
  const schemas: [string, TObject][] = [
    ['a boolean', Type.Object({ id: Type.Integer(), done: Nullable(Type.Boolean()) })],
    // pg reads a numeric as its text, exact.
    ['a numeric', Type.Object({ id: Type.Integer(), price: Nullable(Type.String()) })],
    ['a JSON column', Type.Object({ id: Type.Integer(), extra: Nullable(Type.Object({ a: Type.Array(Type.Integer()) })) })],
    // A column it writes itself, NULL in one row: that row goes the usual way.
    ['a nullable text', Type.Object({ id: Type.Integer(), name: Type.String(), note: Nullable(Type.String()) })],
    ['a text as an integer', Type.Object({ id: Type.Integer(), small: Type.Integer(), name: Type.String(), done: Nullable(Type.Boolean()) })]
  ]
  for (const [what, schema] of schemas) {
    const columns = Object.keys(schema.properties)
    const asJson = prepare<[after: number], { id: number, json: string }>(db, `things.json.${what}`, select(db, columns), jsonRows(schema))
    const asObjects = prepare<[after: number], Record<string, unknown>>(db, `things.objects.${what}`, select(db, columns))
    const { rows } = await asJson([0])
    t.equal(`[${rows.map(row => row.json).join(',')}]`, await serialized(schema, (await asObjects([0])).rows), what)
  }
})
