import { readFileSync } from 'node:fs'
import t from 'tap'
import { build } from '../helper.js'

/** The version as the project declares it, read apart from the service's own reading of it. */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }

t.test('liveness and readiness answer 200 while the database does, with the running version', async t => {
  const app = await build(t)
  for (const url of ['/health/live', '/health/ready']) {
    const res = await app.inject({ url })
    t.equal(res.statusCode, 200, url)
    t.same(res.json(), { status: 'ok', version }, `${url}: package.json's version`)
  }
})
