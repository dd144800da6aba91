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

t.test('behind a proxy named in TRUST_PROXY, the 404 limit counts each client it forwards, and a client cannot name another', async t => {
  const app = await build(t, config => { config.auth.rateLimit.notFoundPerIp = 2; config.trustProxy = ['10.0.0.0/24'] })
  const from = (remoteAddress: string, forwardedFor: string) => app.inject({ url: '/nowhere', remoteAddress, headers: { 'x-forwarded-for': forwardedFor } })
  for (let i = 0; i < 2; i++) t.equal((await from('10.0.0.1', '198.51.100.1')).statusCode, 404)
  t.equal((await from('10.0.0.1', '198.51.100.1')).statusCode, 429, 'the first client behind the proxy is past its limit')
  t.equal((await from('10.0.0.1', '198.51.100.2')).statusCode, 404, 'another client behind the same proxy is not')
  t.equal((await from('10.0.0.2', '198.51.100.1')).statusCode, 429, 'the first client is itself through another proxy of the network too')
  t.equal((await from('10.0.0.1', '198.51.100.2, 198.51.100.1')).statusCode, 429, 'a made-up address before the proxy\'s does not help the first client')
  t.equal((await from('198.51.100.1', '198.51.100.9')).statusCode, 429, 'nor does X-Forwarded-For sent straight to the service')
  t.equal((await from('198.51.100.3', '198.51.100.1')).statusCode, 404, 'and a client that is no proxy cannot spend another\'s budget')
})
