import t from 'tap'
import { build } from '../../helper.js'

t.test('the security headers on every answer, and nothing that names the software', async t => {
  const app = await build(t)
  for (const url of ['/students', '/students/999', '/nowhere']) {
    const res = await app.inject({ url })
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['x-frame-options'], 'DENY', url)
    t.match(res.headers['strict-transport-security'], /max-age=\d+/, url)
    t.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'", url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
    t.notOk(res.headers['x-powered-by'], url)
    t.notOk(res.headers.server, url)
  }
})

t.test('the documentation page\'s scripts are all local files, which its policy lets run', async t => {
  const app = await build(t)
  const page = await app.inject({ url: '/documentation/' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-security-policy'], /script-src 'self'/)
  const scripts = page.body.match(/<script[^>]*>/g) ?? []
  t.ok(scripts.length > 0)
  t.same(scripts.filter(tag => !/ src="\.\/[^"]+"/.test(tag)), [], 'no inline script, nothing from elsewhere')
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

t.test('bodies: 32 KiB at most, 8 KiB on the routes open without a token (413 beyond)', async t => {
  const app = await build(t)
  const padded = (bytes: number) => JSON.stringify({ email: 'a@example.com', password: 'x'.repeat(bytes) })
  t.equal((await app.inject({ method: 'POST', url: '/api/login', headers: { 'content-type': 'application/json' }, payload: padded(7_000) })).statusCode, 400, 'under 8 KiB: read, then refused as too long a password')
  for (const url of ['/api/login', '/api/register']) {
    const res = await app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: padded(9_000) })
    t.equal(res.statusCode, 413, url)
    t.match(res.json(), { success: false, statusCode: 413 })
  }
  const big = JSON.stringify({ name: 'x'.repeat(20_000), email: 'a@example.com', age: 20, dob: '2000-01-01' })
  t.equal((await app.inject({ method: 'POST', url: '/students', headers: { 'content-type': 'application/json' }, payload: big })).statusCode, 400, '20 KB elsewhere: read, then refused as too long a name')
  t.equal((await app.inject({ method: 'POST', url: '/students', headers: { 'content-type': 'application/json' }, payload: big + ' '.repeat(15_000) })).statusCode, 413)
})
