import t from 'tap'
import knex from 'knex'
import { prepare } from '../../lib/prepared-query.js'
import { createDatabase } from '../helper.js'

t.test('arguments go where the stand-ins were, constants stay, on the pool or in a transaction', async t => {
  const db = knex({ client: 'pg', connection: await createDatabase(t), pool: { min: 0, max: 2 } })
  t.teardown(() => db.destroy())
  await db.schema.createTable('items', table => {
    table.increments('id')
    table.text('name').notNullable()
  })
  await db('items').insert([{ name: 'a' }, { name: 'b' }, { name: 'c' }, { name: 'd' }])

  // `first()` adds the constant 1 after the two arguments; `whereIn` takes a list.
  const between = prepare<[from: number, to: number], { name: string }>(db, 'items.between', (from, to) =>
    db('items').select('name').where('id', '>=', from).andWhere('id', '<=', to).orderBy('id', 'desc').first())
  t.same((await between([2, 3])).rows, [{ name: 'c' }])
  t.same((await between([1, 4])).rows, [{ name: 'd' }], 'the same statement with other values')

  const add = prepare<[name: string], { id: number }>(db, 'items.add', name => db('items').insert({ name }).returning('id'))
  await t.rejects(db.transaction(async trx => {
    await add(['e'], trx)
    t.equal(Number((await trx('items').count({ n: '*' }))[0]!.n), 5, 'inside the transaction')
    throw new Error('roll back')
  }), /roll back/)
  t.equal(Number((await db('items').count({ n: '*' }))[0]!.n), 4, 'rolled back with the transaction')
  t.equal((await add(['e'])).rowCount, 1, 'on a pooled connection')

  t.throws(() => prepare(db, 'items.unused', (_id: never) => db('items').select('name')), /does not use its argument 0/)
})

t.test('an error is pg\'s own, without the SQL text', async t => {
  const db = knex({ client: 'pg', connection: await createDatabase(t), pool: { min: 0, max: 1 } })
  t.teardown(() => db.destroy())
  await db.schema.createTable('items', table => { table.text('name').unique() })
  const add = prepare<[name: string], never>(db, 'items.add', name => db('items').insert({ name }))
  await add(['a'])
  const error = await add(['a']).catch((error: unknown) => error) as { code: string, message: string }
  t.equal(error.code, '23505')
  t.notMatch(error.message, /insert into/)
  t.equal((await add(['b'])).rowCount, 1, 'the connection went back to the pool')
})
