import { once } from 'node:events'
import http from 'node:http'
import t from 'tap'
import { databaseEnv, sleep, startServer } from './process.js'

t.test('SIGTERM gives up on a request that never finishes, after the grace period', async t => {
  const server = await startServer(await databaseEnv(t))
  t.teardown(() => server.process.kill('SIGKILL'))
  const exited = once(server.process, 'exit')
  const started = Date.now()
  const req = http.request(`${server.url}/students`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 100 } })
  req.on('error', () => {})
  req.write('{"name":')
  await sleep(200)
  server.process.kill('SIGTERM')
  await sleep(200)
  server.process.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 1)
  t.ok(Date.now() - started >= 10_000, 'waited for the grace period, a second SIGTERM notwithstanding')
  t.ok(server.logs.some(entry => entry.msg === 'in-flight requests did not finish in time'))
})
