import t from 'tap'
import { build } from '../../helper.js'

t.test('a route that does not exist: 404 in the error body', async t => {
  const app = await build(t)
  const res = await app.inject({ url: '/nowhere?x=1' })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { success: false, statusCode: 404, error: 'Not Found', code: 'route_not_found', message: 'Route GET /nowhere not found' })
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

t.test('a method a path does not take: 405 in the error body, with Allow naming those it takes; no path, still 404', async t => {
  const app = await build(t)
  const wrong = [
    ['PATCH', '/api/v1/students/5', 'GET, HEAD, PUT, DELETE'],
    ['POST', '/api/v1/students/5', 'GET, HEAD, PUT, DELETE'],
    ['PUT', '/api/v1/students', 'GET, HEAD, POST'],
    ['POST', '/students/5', 'GET, HEAD, PUT, PATCH, DELETE'],
    ['PATCH', '/students', 'GET, HEAD, POST'],
    ['DELETE', '/students/?x=1', 'GET, HEAD, POST'],
    ['POST', '/api/clients/5', 'GET, HEAD, PUT, PATCH, DELETE'],
    ['DELETE', '/api/clients', 'GET, HEAD, POST'],
    ['GET', '/api/login', 'POST'],
    ['TRACE', '/', 'GET, HEAD']
  ] as const
  for (const [method, url, allow] of wrong) {
    const res = await app.inject({ method, url, payload: method === 'GET' || method === 'TRACE' ? undefined : {} })
    const path = url.split('?')[0]
    t.equal(res.statusCode, 405, `${method} ${url}`)
    t.equal(res.headers.allow, allow, `${method} ${url}: Allow`)
    t.same(res.json(), { success: false, statusCode: 405, error: 'Method Not Allowed', code: 'method_not_allowed', message: `Method ${method} not allowed on ${path}; it takes ${allow}` }, `${method} ${url}: the error body`)
  }
  t.equal((await app.inject({ method: 'PATCH', url: '/api/clients/5' })).statusCode, 401, 'a method the path takes is routed as before')
  for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
    const res = await app.inject({ method, url: '/api/v1/students/5/nowhere' })
    t.equal(res.statusCode, 404, `${method} of a path no route serves`)
    t.notOk(res.headers.allow)
  }
  // HEAD wherever GET is (Fastify), OPTIONS for CORS preflights only (with CORS_ORIGIN): elsewhere, 404 as before.
  t.equal((await app.inject({ method: 'HEAD', url: '/api/login' })).statusCode, 404, 'HEAD of a path without GET')
  t.equal((await app.inject({ method: 'OPTIONS', url: '/students' })).statusCode, 404, 'OPTIONS without CORS_ORIGIN')
})

t.test('a 405 is not counted as a request for a route that does not exist', async t => {
  const app = await build(t, config => { config.auth.rateLimit.notFoundPerIp = 2 })
  for (let i = 0; i < 5; i++) t.equal((await app.inject({ method: 'PATCH', url: `/api/v1/students/${i + 1}`, payload: {} })).statusCode, 405)
  for (let i = 0; i < 2; i++) t.equal((await app.inject({ url: `/wp-admin/${i}` })).statusCode, 404, 'the 404s still have their whole budget')
  t.equal((await app.inject({ url: '/.env' })).statusCode, 429)
  t.equal((await app.inject({ method: 'PATCH', url: '/api/v1/students/1', payload: {} })).statusCode, 405, 'past the limit, a 405 is still answered as one')
})

t.test('with CORS_ORIGIN, a preflight of a path is answered by CORS, whatever methods the path takes', async t => {
  const app = await build(t, { corsOrigins: ['https://app.example.com'] })
  const preflight = await app.inject({ method: 'OPTIONS', url: '/api/v1/students/5', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'PATCH' } })
  t.equal(preflight.statusCode, 204)
  const patch = await app.inject({ method: 'PATCH', url: '/api/v1/students/5', payload: {}, headers: { origin: 'https://app.example.com' } })
  t.equal(patch.statusCode, 405)
  t.equal(patch.headers['access-control-allow-origin'], 'https://app.example.com', 'the browser may read the 405')
})
