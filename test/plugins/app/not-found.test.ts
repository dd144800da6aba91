import t from 'tap'
import { build } from '../../helper.js'

t.test('a route that does not exist: 404 in the error body', async t => {
  const app = await build(t)
  const res = await app.inject({ url: '/nowhere?x=1' })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { success: false, statusCode: 404, error: 'Not Found', message: 'Route GET /nowhere not found' })
})

t.test('a client asking for routes that do not exist is answered 429 past NOT_FOUND_RATE_LIMIT_IP', async t => {
  const app = await build(t, config => { config.auth.rateLimit.notFoundPerIp = 3 })
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ url: `/wp-admin/${i}` })).statusCode, 404)
  const limited = await app.inject({ url: '/.env' })
  t.equal(limited.statusCode, 429)
  t.match(limited.json(), { success: false, statusCode: 429, error: 'Too Many Requests' })
  t.match(limited.headers['retry-after'], /^\d+$/)
  t.equal((await app.inject({ url: '/students' })).statusCode, 200, 'routes that exist are not limited')
  t.equal((await app.inject({ url: '/nowhere', remoteAddress: '10.0.0.2' })).statusCode, 404, 'another client is not limited')
})
