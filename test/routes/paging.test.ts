import t from 'tap'
import { build } from '../helper.js'
import { bearer, userWithRoles } from './api/accounts.js'

const LISTS = ['/students', '/api/v1/students', '/api/clients', '/api/roles', '/api/users']

t.test('a cursor past the id column\'s range is a 400 naming `after` on every list, never a 500', async t => {
  const app = await build(t)
  const headers = bearer((await userWithRoles(app, ['Admin'])).token)
  for (const url of LISTS) {
    for (const after of ['2147483648', '99999999999999999999']) {
      const res = await app.inject({ url: `${url}?after=${after}`, headers })
      t.equal(res.statusCode, 400, `${url}?after=${after}`)
      t.match(res.json(), { success: false, statusCode: 400, data: { after: [String] } })
    }
    const last = await app.inject({ url: `${url}?after=2147483647`, headers })
    t.equal(last.statusCode, 200, `${url}: the largest id is a cursor like any other`)
  }
})

t.test('limit is optional: a list without it answers a page of at most 100', async t => {
  const app = await build(t)
  for (let i = 0; i < 101; i++) {
    await app.inject({ method: 'POST', url: '/students', payload: { name: `S${i}`, email: `s${i}@example.com`, age: 20, dob: '2000-01-01' } })
  }
  const res = await app.inject({ url: '/students' })
  t.equal(res.json().length, 100)
  t.match(res.headers.link, /limit=100&after=\d+>; rel="next"/)
})
