import t from 'tap'
import knex from 'knex'
import { prepare } from '../../../lib/db/prepared-query.js'
import { SESSION_OPTIONS, types } from '../../../lib/db/pg-types.js'
import { createDatabase, testPool } from '../../helper.js'

t.test('rows of a prepared query equal those pg makes with the service\'s type parsers', async t => {
  const connection = { ...await createDatabase(t), options: SESSION_OPTIONS }
  const db = { knex: knex({ client: 'pg', connection, pool: { min: 0, max: 1 } }), pool: testPool({ ...connection, max: 1 }) }
  const reference = testPool({ ...connection, max: 1, types })
  t.teardown(async () => { await Promise.all([db.knex.destroy(), db.pool.end(), reference.end()]) })
  await db.knex.schema.createTable('things', table => {
    table.increments('id')
    table.text('name')
    table.bigInteger('big')
    table.boolean('done')
    table.date('day')
    table.timestamp('at', { useTz: true })
    table.jsonb('extra')
    table.decimal('price', 10, 2)
  })
  await db.knex('things').insert([
    { name: 'a "quoted" ✓', big: '9007199254740993', done: true, day: '2024-02-29', at: '2026-11-22T09:30:00.123456Z', extra: { tags: ['x'] }, price: '12.50' },
    { name: null, big: null, done: null, day: null, at: null, extra: null, price: null }
  ])

  const all = prepare<[after: number], Record<string, unknown>>(db, 'things.all', after => db.knex('things').select('*').where('id', '>', after).orderBy('id'))
  const { rows } = await all([0])
  const expected = (await reference.query('select * from things order by id')).rows
  t.strictSame(rows, expected)
  t.same(rows.map(row => Object.keys(row)), expected.map(row => Object.keys(row)), 'the columns in order')
  t.strictSame(rows[0], { id: 1, name: 'a "quoted" ✓', big: '9007199254740993', done: true, day: '2024-02-29', at: '2026-11-22T09:30:00.123Z', extra: { tags: ['x'] }, price: '12.50' })
  t.equal(Object.getPrototypeOf(rows[0]), Object.prototype)
  t.strictSame((await all([0])).rows, expected, 'the second time, on the prepared statement')
  t.same((await all([2])).rows, [], 'no rows')

  for (const alias of ['odd name', '__proto__']) {
    const odd = prepare<[id: number], never>(db, `things.${alias}`, id => db.knex('things').select({ [alias]: 'name' }).where({ id }))
    await t.rejects(odd([1]), new RegExp(`Column name "${alias}" is not a plain identifier`), `refuses ${alias}`)
  }
})
