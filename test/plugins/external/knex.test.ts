import pg from 'pg'
import t from 'tap'
import { build, within } from '../../helper.js'

t.test('a connection whose backend is terminated under a knex query is not lent again: the request waiting for it gets a live one', async t => {
  const app = await build(t, config => { config.dbPoolMax = 1 })
  const { pool } = app.database
  const admin = new pg.Client(pool.options)
  await admin.connect()
  t.teardown(() => admin.end())
  for (let round = 0; round < 5; round++) {
    // The pool's one connection, held by a query the server is made to end with a FATAL error.
    const marker = `select pg_sleep(30), ${round} as round`
    const held = app.knex.raw(marker).then(() => undefined, (error: unknown) => error as { code?: string })
    let backend: number | undefined
    t.ok(await within(10_000, async () => {
      const { rows } = await admin.query('select pid from pg_stat_activity where datname = current_database() and query = $1 and state = \'active\'', [marker])
      backend = rows[0]?.pid
      return backend !== undefined
    }), 'the query runs')
    // Waiting for the connection before it fails: the pool hands it over as soon as knex releases it.
    const waiting = Promise.resolve(app.knex.raw('select 1 as one'))
    t.ok(await within(10_000, () => pool.waitingCount === 1), 'a query waits for the connection')
    // Waits for the backend to exit: the next round's look-up cannot find it.
    await admin.query('select pg_terminate_backend($1, 10000)', [backend])
    t.equal((await held)?.code, '57P01', 'the terminated query fails with the server\'s FATAL error')
    const { rows } = await waiting
    t.same(rows, [{ one: 1 }], `round ${round}: the waiting query is answered on a live connection`)
  }
})
