import t, { type Test } from 'tap'
import knex, { type Knex } from 'knex'
import { afterCommit } from '../../../lib/db/after-commit.js'
import { createDatabase } from '../../helper.js'

/** knex on a fresh database with a table of items, and another connection to it, as another request would have. */
async function database (t: Test): Promise<{ db: Knex, other: Knex }> {
  const connection = await createDatabase(t)
  const db = knex({ client: 'pg', connection, pool: { min: 0, max: 1 } })
  const other = knex({ client: 'pg', connection, pool: { min: 0, max: 1 } })
  t.teardown(async () => { await Promise.all([db.destroy(), other.destroy()]) })
  // Deferred, the unique check runs at COMMIT: a transaction whose commit fails.
  await other.raw('select 1') // connected already: an action's look-up starts at once
  await db.raw('create table items (name text, constraint items_once unique (name) deferrable initially deferred)')
  return { db, other }
}

/** Actions that note their name when run, and whether another connection saw the item of that name then. */
function actions (other: Knex) {
  const fired: string[] = []
  const sights: Promise<string>[] = []
  return {
    fired,
    note: (name: string) => () => {
      fired.push(name)
      sights.push(other('items').where({ name }).first().then(row => row === undefined ? `${name} unseen` : `${name} seen`))
    },
    seen: async () => (await Promise.all(sights)).sort()
  }
}

/** Lets whatever knex settles run its callbacks. */
const settled = () => new Promise(resolve => setImmediate(resolve))

t.test('outside a transaction, the action runs at once', async t => {
  const { db, other } = await database(t)
  const { fired, note, seen } = actions(other)
  await db('items').insert({ name: 'a' })
  afterCommit(db, note('a'))
  t.same(fired, ['a'])
  t.same(await seen(), ['a seen'])
})

t.test('in a transaction, the action runs once it commits, before its promise resolves, when others see the write', async t => {
  const { db, other } = await database(t)
  const { fired, note, seen } = actions(other)
  await db.transaction(async trx => {
    await trx('items').insert({ name: 'a' })
    afterCommit(trx, note('a'))
    await trx('items').select()
    t.same(fired, [], 'not while the transaction is open')
  })
  t.same(fired, ['a'])
  t.same(await seen(), ['a seen'])
})

t.test('in savepoints, the actions wait past their release for the outermost transaction to commit', async t => {
  const { db, other } = await database(t)
  const { fired, note, seen } = actions(other)
  await db.transaction(async trx => {
    await trx.transaction(async savepoint => {
      await savepoint('items').insert({ name: 'a' })
      afterCommit(savepoint, note('a'))
      await savepoint.transaction(async inner => {
        await inner('items').insert({ name: 'b' })
        afterCommit(inner, note('b'))
      })
      await savepoint('items').select()
      t.same(fired, [], 'not when the inner savepoint is released')
    })
    await trx('items').select()
    t.same(fired, [], 'not when the savepoints are released, the transaction still open')
    await settled()
    t.same(fired, [], 'nor a while later')
  })
  t.same(fired.sort(), ['a', 'b'], 'once the transaction commits')
  t.same(await seen(), ['a seen', 'b seen'], 'when another connection sees the writes')
})

t.test('never when the outermost transaction rolls back, or its commit fails', async t => {
  const { db, other } = await database(t)
  const { fired, note } = actions(other)
  await t.rejects(db.transaction(async trx => {
    await trx('items').insert({ name: 'a' })
    afterCommit(trx, note('a'))
    await trx.transaction(async savepoint => {
      await savepoint('items').insert({ name: 'b' })
      afterCommit(savepoint, note('b'))
    })
    throw new Error('roll back')
  }), /roll back/)
  await db('items').insert({ name: 'c' })
  await t.rejects(db.transaction(async trx => {
    await trx.transaction(async savepoint => {
      await savepoint('items').insert({ name: 'c' })
      afterCommit(savepoint, note('c'))
    })
  }), { code: '23505' }, 'the deferred unique check fails the COMMIT')
  await settled()
  t.same(fired, [])
  t.same(await db('items').pluck('name'), ['c'], 'only the write outside them is there')
})

t.test('a savepoint rolled back drops the actions registered in it; the transaction goes on and runs its others', async t => {
  const { db, other } = await database(t)
  const { fired, note, seen } = actions(other)
  await db.transaction(async trx => {
    await trx('items').insert({ name: 'a' })
    afterCommit(trx, note('a'))
    await t.rejects(trx.transaction(async savepoint => {
      await savepoint('items').insert({ name: 'b' })
      afterCommit(savepoint, note('b'))
      // Released, but inside the savepoint that rolls back.
      await savepoint.transaction(async inner => {
        await inner('items').insert({ name: 'c' })
        afterCommit(inner, note('c'))
      })
      throw new Error('undo b and c')
    }), /undo b and c/)
    await trx.transaction(async savepoint => {
      await savepoint('items').insert({ name: 'd' })
      afterCommit(savepoint, note('d'))
    })
  })
  t.same(fired.sort(), ['a', 'd'])
  t.same(await seen(), ['a seen', 'd seen'])
  t.same((await db('items').pluck('name')).sort(), ['a', 'd'])
})
