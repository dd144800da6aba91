import t from 'tap'
import { build } from './helper.js'

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
