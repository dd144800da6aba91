import { once } from 'node:events'
import http from 'node:http'
import t from 'tap'
import { within } from '../helper.js'
import { databaseEnv, listeningWorkers, sleep, startServer } from './process.js'

t.test('WORKERS=2: a worker that does not stop in time is killed, and the primary exits 1', async t => {
  // The primary gives its workers SHUTDOWN_GRACE and 2 s more.
  const server = await startServer({ ...await databaseEnv(t), WORKERS: '2', SHUTDOWN_GRACE: '1s' })
  t.teardown(() => server.kill())
  t.ok(await within(60_000, () => listeningWorkers(server).length === 2))
  const [hung] = listeningWorkers(server) as [number]
  process.kill(hung, 'SIGSTOP')
  const exited = once(server.process, 'exit')
  server.process.kill('SIGTERM')
  await sleep(200)
  server.process.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 1)
  t.ok(server.logs.some(entry => entry.msg === 'the workers did not stop in time'))
  const gone = (pid: number) => { try { process.kill(pid, 0); return false } catch { return true } }
  t.ok(await within(2_000, () => gone(hung)), 'the hung worker is gone')
})

t.test('WORKERS=2: a worker whose request outlasts SHUTDOWN_GRACE exits 1, and so does the primary', async t => {
  // No metrics: the primary has no listener to close.
  const server = await startServer({ ...await databaseEnv(t), WORKERS: '2', SHUTDOWN_GRACE: '1s', METRICS_PORT: 'off' })
  t.teardown(() => server.kill())
  t.ok(await within(60_000, () => listeningWorkers(server).length === 2))
  // A body that never comes: the worker holding it cannot finish.
  const req = http.request(`${server.url}/students`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 100 } })
  req.on('error', () => {})
  req.write('{"name":')
  await sleep(200)
  const exited = once(server.process, 'exit')
  server.process.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 1)
  t.ok(server.logs.some(entry => entry.msg === 'in-flight requests did not finish in time'), 'the worker gave up on it')
  t.notOk(server.logs.some(entry => entry.msg === 'the workers did not stop in time'), 'before the primary had to kill it')
})
