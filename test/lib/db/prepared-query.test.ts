import { readFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import t, { type Test } from 'tap'
import knex from 'knex'
import pg from 'pg'
import { prepare, runOnPool, type Database } from '../../../lib/db/prepared-query.js'
import { Statement } from '../../../lib/db/statement-query.js'
import { createDatabase, testPool } from '../../helper.js'

const require = createRequire(import.meta.url)

/** knex and a pg pool on a fresh database, with a table of items. */
async function database (t: Test): Promise<Database> {
  const connection = await createDatabase(t)
  const db = { knex: knex({ client: 'pg', connection, pool: { min: 0, max: 2 } }), pool: testPool({ ...connection, max: 1 }) }
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
  t.throws(() => prepare(db, 'items.since', (id: never) => knex('items').where({ id }).andWhere('at', '>', new Date())), /items.since holds a constant that is not a scalar/)
  t.throws(() => prepare(db, 'items.truncate', () => knex('items').truncate()), /items.truncate is not a SELECT, INSERT, UPDATE or DELETE/)
})

t.test('a name declared again with other SQL is refused at once; with the same SQL, or on another pool, it is not', async t => {
  const db = await database(t)
  const { knex } = db
  await knex('items').insert([{ name: 'a' }, { name: 'b' }])
  const first = prepare<[id: number], { name: string }>(db, 'items.pick', id => knex('items').select('name').where({ id }))
  t.same((await first([1])).rows, [{ name: 'a' }])
  // On the pool's one connection, which holds the first text under that name, the second
  // would silently run the first.
  t.throws(() => prepare(db, 'items.pick', (id: never) => knex('items').select('name').where('id', '>', id)),
    /The prepared statement name items.pick is taken by another query/)
  const again = prepare<[id: number], { name: string }>(db, 'items.pick', id => knex('items').select('name').where({ id }))
  t.same((await again([2])).rows, [{ name: 'b' }], 'the same text again is the same statement')
  // A statement made directly, not through prepare(), is refused too, on the connection that
  // holds the name: it does not run the other text.
  await t.rejects(runOnPool(db.pool, new Statement('items.pick', 'select id as name from items where id > $1'), [0]),
    /The prepared statement name items.pick is taken by another query/)
  t.same((await first([2])).rows, [{ name: 'b' }], 'and the connection serves on')
  const other = await database(t)
  const elsewhere = prepare<[id: number], { id: number }>(other, 'items.pick', id => other.knex('items').select('id').where('id', '>', id))
  t.same((await elsewhere([0])).rows, [], 'another pool has names of its own')
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

t.test('a failed statement leaves its connection in the pool, ready for the next', async t => {
  const db = await database(t)
  const add = prepare<[name: string], never>(db, 'items.add', name => db.knex('items').insert({ name }))
  const backend = prepare<[id: number], { pid: number }>(db, 'items.backend', id => db.knex.select(db.knex.raw('pg_backend_pid() as pid')).where(db.knex.raw('?::int > 0', [id])))
  const before = (await backend([1])).rows[0]!.pid
  await add(['a'])
  await t.rejects(add(['a']), { code: '23505' })
  t.equal((await backend([1])).rows[0]!.pid, before, 'the same server process: the connection was not dropped')
})

t.test('the row count of each kind of statement, and rows asked for at once before the first came back', async t => {
  const db = await database(t)
  const { knex } = db
  const add = prepare<[name: string], { id: number, name: string }>(db, 'items.add', name => knex('items').insert({ name }).returning(['id', 'name']))
  const rename = prepare<[suffix: string], never>(db, 'items.rename', suffix => knex('items').update({ name: knex.raw('name || ?', [suffix]) }))
  const remove = prepare<[from: number], never>(db, 'items.remove', from => knex('items').where('id', '>=', from).delete())
  const list = prepare<[after: number], { id: number, name: string }>(db, 'items.list', after => knex('items').select('id', 'name').where('id', '>', after).orderBy('id'))

  // On a pool of one connection, all four wait for it: none has seen its rows described yet.
  const added = await Promise.all(['a', 'b', 'c', 'd'].map(name => add([name])))
  t.same(added.map(result => result.rows), [[{ id: 1, name: 'a' }], [{ id: 2, name: 'b' }], [{ id: 3, name: 'c' }], [{ id: 4, name: 'd' }]])
  t.same(added.map(result => result.rowCount), [1, 1, 1, 1], 'INSERT 0 1')
  t.equal((await rename(['!'])).rowCount, 4, 'UPDATE 4')
  t.same((await list([2])).rows, [{ id: 3, name: 'c!' }, { id: 4, name: 'd!' }])
  t.equal((await list([2])).rowCount, 2, 'SELECT 2')
  t.equal((await remove([2])).rowCount, 3, 'DELETE 3')
  t.equal((await remove([2])).rowCount, 0, 'DELETE 0')
  t.same((await list([0])).rows, [{ id: 1, name: 'a!' }])
})

t.test('a value that its type parser refuses fails the query, and the connection serves the next', async t => {
  const db = await database(t)
  const { knex } = db
  // A parser of the test's own for circles; every other type's parser cannot fail on what PostgreSQL sends.
  const { CIRCLE } = pg.types.builtins
  const original = pg.types.getTypeParser(CIRCLE)
  pg.types.setTypeParser(CIRCLE, value => { if (value.includes('-')) throw new Error(`not a circle of mine: ${value}`); return value })
  t.teardown(() => pg.types.setTypeParser(CIRCLE, original))
  await knex.schema.alterTable('items', table => { table.specificType('ring', 'circle') })
  const add = prepare<[name: string, ring: string | null], never>(db, 'items.add', (name, ring) => knex('items').insert({ name, ring }))
  const addWithout = prepare<[name: string], never>(db, 'items.add-without', name => knex('items').insert({ name, ring: null }))
  for (const [name, ring] of [['a', '<(0,0),1>'], ['b', '<(-1,0),1>'], ['c', '<(1,1),1>'], ['d', null]] as const) await add([name, ring])
  await addWithout(['e'])
  const rings = prepare<[after: number], { ring: string | null }>(db, 'items.rings', after => knex('items').select('ring').where('id', '>', after).orderBy('id'))

  await t.rejects(rings([0]), /not a circle of mine: <\(-1,0\),1>/)
  t.same((await rings([2])).rows, [{ ring: '<(1,1),1>' }, { ring: null }, { ring: null }], 'the next query on the one connection; NULL sent and read back')
})

t.test('the pg and knex internals the prepared queries use: pinned, and checked loudly', async t => {
  const manifest = JSON.parse(await readFile(new URL('../../../package.json', import.meta.url), 'utf8')) as { dependencies: Record<string, string> }
  for (const name of ['pg', 'knex']) {
    const range = manifest.dependencies[name]!
    t.match(range, /^~\d+\.\d+\.\d+$/, `${name} is pinned to a minor range`)
    const installed = (require(`${name}/package.json`) as { version: string }).version
    t.equal(installed.split('.').slice(0, 2).join('.'), range.slice(1).split('.').slice(0, 2).join('.'), `the installed ${name} ${installed} is in ${range}`)
  }

  const db = await database(t)
  const one = prepare<[id: number], { one: number }>(db, 'items.one', id => db.knex.select(db.knex.raw('1 as one')).where(db.knex.raw('?::int > 0', [id])))
  t.same((await one([1])).rows, [{ one: 1 }], 'this pg and this knex have them')

  // A pg whose connection lacks its private bookkeeping: every query fails, saying why.
  const client = new pg.Client(db.pool.options)
  await client.connect()
  t.teardown(() => client.end())
  const connection = (client as unknown as { connection: Record<string, unknown> }).connection
  const records = connection.submittedNamedStatements
  delete connection.submittedNamedStatements
  await t.rejects(new Statement('items.two', 'select 2 as two').run(client, []), /pg's connection lacks submittedNamedStatements, which lib\/db\/statement-query.ts uses/)
  connection.submittedNamedStatements = records
  t.same((await new Statement('items.two', 'select 2 as two').run(client, [])).rows, [{ two: 2 }], 'the client was left usable')

  // A knex whose transaction client lost acquireConnection.
  await t.rejects(db.knex.transaction(async trx => {
    Object.assign(trx.client, { acquireConnection: undefined })
    await one([1], trx)
  }), /knex's client lacks acquireConnection or releaseConnection, which lib\/db\/prepared-query.ts uses/)
})
