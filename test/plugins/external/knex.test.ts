import pg from 'pg'
import t from 'tap'
import { build } from '../../helper.js'

t.test('a connection whose backend is terminated under a knex query is not lent again: the request waiting for it gets a live one', async t => {
  const app = await build(t, config => { config.dbPoolMax = 1 })
  const admin = new pg.Client(app.database.pool.options)
  await admin.connect()
  t.teardown(() => admin.end())
  for (let round = 0; round < 5; round++) {
    // The pool's one connection, held by a query the server is made to end with a FATAL error.
    const held = app.knex.raw('select pg_sleep(30)').catch((error: unknown) => error)
    const pid = async () => (await admin.query("select pid from pg_stat_activity where query = 'select pg_sleep(30)' and state = 'active'")).rows[0]?.pid as number | undefined
    let backend: number | undefined
    while ((backend = await pid()) === undefined) await new Promise(resolve => setTimeout(resolve, 10))
    // Queued for the connection before it fails: the pool hands it over as soon as knex releases it.
    const waiting = app.knex.raw('select 1 as one')
    await admin.query('select pg_terminate_backend($1)', [backend])
    t.ok(await held instanceof Error, 'the terminated query fails')
    const { rows } = await waiting
    t.same(rows, [{ one: 1 }], `round ${round}: the waiting query is answered on a live connection`)
  }
})
