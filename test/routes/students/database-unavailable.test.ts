import t from 'tap'
import { build } from '../../helper.js'

t.test('a request that finds no database connection in time answers 503 with Retry-After', async t => {
  const app = await build(t, { dbPoolMax: 1 })
  // Hold the only connection of the pool in an open transaction.
  const trx = await app.knex.transaction()
  t.teardown(() => trx.rollback())

  const res = await app.inject({ method: 'GET', url: '/students' })
  t.equal(res.statusCode, 503)
  t.equal(res.headers['retry-after'], '5')
  t.same(res.json(), {
    success: false, statusCode: 503, error: 'Service Unavailable', message: 'The database is unavailable; try again later'
  })
})
