import t from 'tap'
import { build } from '../../helper.js'

t.test('no CORS headers without CORS_ORIGIN', async t => {
  const app = await build(t)
  const res = await app.inject({ url: '/students', headers: { origin: 'https://evil.example' } })
  t.equal(res.statusCode, 200)
  t.notOk(res.headers['access-control-allow-origin'])
})

t.test('CORS_ORIGIN allows the origins it lists, and only those', async t => {
  const app = await build(t, { corsOrigins: ['https://app.example.com'] })
  const allowed = await app.inject({ url: '/students', headers: { origin: 'https://app.example.com' } })
  t.equal(allowed.headers['access-control-allow-origin'], 'https://app.example.com')
  t.match(allowed.headers['access-control-expose-headers'], /Location/)
  t.match(allowed.headers['access-control-expose-headers'], /X-Total-Count/, 'a browser reads a list\'s count')
  const exposed = String(allowed.headers['access-control-expose-headers']).split(/,\s*/).map(name => name.toLowerCase())
  for (const header of ['etag', 'idempotent-replayed', 'x-request-id', 'traceparent', 'ratelimit-policy', 'ratelimit']) {
    t.ok(exposed.includes(header), `a browser reads ${header} (If-Match, retries, support requests, traces, rate limits)`)
  }
  const other = await app.inject({ url: '/students', headers: { origin: 'https://evil.example' } })
  t.notOk(other.headers['access-control-allow-origin'])

  const preflight = await app.inject({
    method: 'OPTIONS',
    url: '/api/clients',
    headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST', 'access-control-request-headers': 'authorization, content-type, x-requested-with' }
  })
  t.equal(preflight.statusCode, 204)
  t.match(preflight.headers['access-control-allow-methods'], /POST/)
  t.match(preflight.headers['access-control-allow-headers'], /x-requested-with/)
})

t.test('CORS_ORIGIN=* allows any origin', async t => {
  const app = await build(t, { corsOrigins: ['*'] })
  const res = await app.inject({ url: '/students', headers: { origin: 'https://anywhere.example' } })
  t.equal(res.headers['access-control-allow-origin'], '*')
})

t.test('a 503 of load shedding carries the CORS headers, so that a browser can read it and its Retry-After', async t => {
  const app = await build(t, config => {
    config.corsOrigins = ['https://app.example.com']
    config.timeouts.maxEventLoopDelay = 100
  })
  const headers = { origin: 'https://app.example.com' }
  // The event loop stalls until a request is shed, as in test/faults/database.test.ts.
  let shed: Awaited<ReturnType<typeof app.inject>> | undefined
  for (let stalls = 0; stalls < 20 && shed?.statusCode !== 503; stalls++) {
    const until = Date.now() + 600
    while (Date.now() < until) { /* busy */ }
    await new Promise(resolve => setTimeout(resolve, 0))
    shed = await app.inject({ url: '/students', headers })
  }
  t.equal(shed!.statusCode, 503)
  t.equal(shed!.headers['access-control-allow-origin'], 'https://app.example.com')
  t.match(shed!.headers['access-control-expose-headers'], /Retry-After/)
  t.ok(shed!.headers['x-request-id'], 'and its X-Request-Id, as every answer')
  t.equal(shed!.headers['x-content-type-options'], 'nosniff', 'and the security headers')
})

t.test('a preflight refused for a missing header carries X-Request-Id and the security headers, as every answer', async t => {
  const app = await build(t, { corsOrigins: ['https://app.example.com'] })
  const res = await app.inject({ method: 'OPTIONS', url: '/api/clients', headers: { origin: 'https://app.example.com', 'x-request-id': 'preflight-1' } })
  t.equal(res.statusCode, 400)
  t.match(res.json(), { success: false, statusCode: 400, code: 'bad_request' })
  t.equal(res.headers['x-request-id'], 'preflight-1')
  t.equal(res.headers['x-content-type-options'], 'nosniff')
})
