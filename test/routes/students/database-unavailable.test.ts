import t from 'tap'
import { build } from '../../helper.js'

t.test('a request that finds no database connection in time answers 503 with Retry-After', async t => {
  const app = await build(t, { dbPoolMax: 1, bulkConcurrency: 1 })
  // Hold the pool's only connection in an open transaction.
  const trx = await app.knex.transaction()
  t.teardown(() => trx.rollback())

  const live = await app.inject({ url: '/health/live' })
  t.equal(live.statusCode, 200, 'alive all the same')
  const ready = await app.inject({ url: '/health/ready' })
  t.equal(ready.statusCode, 503, 'not ready')
  t.equal(ready.headers['retry-after'], '5')

  // A prepared query, an update that knex builds, an export (whose slot is given back).
  for (const [method, url, accept] of [['GET', '/students', undefined], ['PATCH', '/students/1', undefined], ['GET', '/students', 'text/csv'], ['GET', '/students', 'text/csv']] as const) {
    const res = await app.inject({ method, url, headers: accept === undefined ? {} : { accept }, ...(method === 'PATCH' && { payload: { age: 30 } }) })
    t.equal(res.statusCode, 503, `${method} ${url}`)
    t.equal(res.headers['retry-after'], '5')
    t.same(res.json(), {
      success: false, statusCode: 503, error: 'Service Unavailable', code: 'unavailable', message: 'The database is unavailable; try again later'
    })
  }
})
