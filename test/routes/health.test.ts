import t from 'tap'
import { build } from '../helper.js'

t.test('liveness and readiness answer 200 while the database does', async t => {
  const app = await build(t)
  for (const url of ['/health/live', '/health/ready']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, url)
    t.same(res.json(), { status: 'ok' })
  }
})
