import t, { type Test } from 'tap'
import knex from 'knex'
import pg from 'pg'
import { prepare, type Database } from '../../lib/prepared-query.js'
import { createDatabase } from '../helper.js'

/** knex and a pg pool on a fresh database, with a table of items. */
async function database (t: Test): Promise<Database> {
  const connection = await createDatabase(t)
  const db = { knex: knex({ client: 'pg', connection, pool: { min: 0, max: 2 } }), pool: new pg.Pool({ ...connection, max: 1 }) }
  t.teardown(async () => { await Promise.all([db.knex.destroy(), db.pool.end()]) })
  await db.knex.schema.createTable('items', table => {
    table.increments('id')
    table.text('name').notNullable().unique()
  })
  return db
}

t.test('arguments go where the stand-ins were, constants stay, on the pool or in a transaction', async t => {
  const db = await database(t)
  const { knex } = db
  await knex('items').insert([{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }])

  // `first()` adds the constant 1 after the two arguments.
  const between = prepare<[from: number, to: number], { name: string }>(db, 'items.between', (from, to) =>
    knex('items').select('name').where('id', '>=', from).andWhere('id', '<=', to).orderBy('id', 'desc').first())
  t.same((await between([2, 3])).rows, [{ name: 'c' }])
  t.same((await between([1, 4])).rows, [{ name: 'd' }], 'the same statement with other values')

  const add = prepare<[name: string], { id: number }>(db, 'items.add', name => knex('items').insert({ name }).returning('id'))
  await t.rejects(knex.transaction(async trx => {
    await add(['e'], trx)
    t.equal(Number((await trx('items').count({ n: '*' }))[0]!.n), 5, 'inside the transaction')
    throw new Error('roll back')
  }), /roll back/)
  t.equal(Number((await knex('items').count({ n: '*' }))[0]!.n), 4, 'rolled back with the transaction')
  t.equal((await add(['e'])).rowCount, 1, 'on the pool')
  t.equal((await add(['f'], knex)).rowCount, 1, 'on the pool when given knex itself')

  t.throws(() => prepare(db, 'items.unused', (_id: never) => knex('items').select('name')), /does not use its argument 0/)
})

t.test('an error is pg\'s own, without the SQL text, and the connection goes back to the pool', async t => {
  const db = await database(t)
  const add = prepare<[name: string], never>(db, 'items.add', name => db.knex('items').insert({ name }))
  await add(['a'])
  const error = await add(['a']).catch((error: unknown) => error) as { code: string, message: string }
  t.equal(error.code, '23505')
  t.notMatch(error.message, /insert into/)
  t.equal((await add(['b'])).rowCount, 1, 'the one connection is free again')
  await t.rejects(db.knex.transaction(trx => add(['b'], trx)), { code: '23505' }, 'in a transaction too')
  t.equal((await add(['c'])).rowCount, 1)
})
