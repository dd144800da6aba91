import { once } from 'node:events'
import net from 'node:net'
import t from 'tap'
import { within } from '../helper.js'
import { scrape, series, value } from '../prometheus.js'
import { databaseEnv, listeningWorkers, startServer } from './process.js'

t.test('WORKERS=2: two processes on one port; a worker that dies is replaced; SIGTERM stops them all', async t => {
  const server = await startServer({ ...await databaseEnv(t), WORKERS: '2' })
  t.teardown(() => server.kill())
  t.ok(await within(60_000, () => listeningWorkers(server).length === 2), 'both workers listen')
  const [first, second] = listeningWorkers(server) as [number, number]
  t.not(first, second)
  t.equal(new Set(server.logs.filter(entry => String(entry.msg).startsWith('Server listening at')).map(entry => entry.msg)).size, 1, 'on the same address')

  const created = await fetch(`${server.url}/students`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Ada', email: 'ada@example.com', age: 36, dob: '1815-12-10' })
  })
  t.equal(created.status, 201)

  process.kill(first, 'SIGKILL')
  // Only once the primary has seen the worker exit: a connection the primary hands to a worker
  // in the instant it dies is lost (Node's cluster waits for an answer that never comes).
  t.ok(await within(60_000, () => server.logs.some(entry => entry.msg === 'a worker stopped; starting another' && entry.worker === first)), 'the primary sees the worker die')
  const meanwhile = await fetch(`${server.url}/students/1`, { signal: AbortSignal.timeout(30_000) })
  t.equal(meanwhile.status, 200, 'the other worker serves meanwhile')
  t.ok(await within(60_000, () => listeningWorkers(server).length === 3), 'a new worker replaces the dead one')

  // Another worker dies, and SIGTERM comes before its replacement would start (RESTART_DELAY_MS
  // after the primary sees the death): none starts. SIGTERM waits for the primary to have seen
  // it: a worker that died before the shutdown is no failure of the shutdown.
  const exited = once(server.process, 'exit')
  process.kill(second, 'SIGKILL')
  t.ok(await within(60_000, () => server.logs.some(entry => entry.msg === 'a worker stopped; starting another' && entry.worker === second)), 'the primary sees the second die')
  server.process.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0, 'exits 0 once every worker finished')
  // The restart is cancelled unless a loaded machine let its second pass before the SIGTERM.
  t.match(server.logs.filter(entry => entry.role === 'primary' && String(entry.msg).startsWith('shutting down')), [{ reason: 'SIGTERM', cancelledRestarts: Number }], 'saying once what it stops')
  t.equal(listeningWorkers(server).length, 3, 'no replacement started during shutdown')
  for (const pid of listeningWorkers(server)) t.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `worker ${pid} is gone`)
})

t.test('WORKERS=2 where the workers cannot start: the primary exits 1', async t => {
  // No waiting for a database that does not answer: the workers fail at once.
  const env = { ...await databaseEnv(t), WORKERS: '2', DB_PORT: '1', DB_STARTUP_WAIT: '0' }
  const server = startServer(env)
  await t.rejects(server, /server exited with 1/)
})

t.test('WORKERS=2: the primary serves the workers\' metrics, summed; the workers have no listener of their own', async t => {
  const server = await startServer({ ...await databaseEnv(t), WORKERS: '2' })
  t.teardown(() => server.kill())
  t.ok(await within(60_000, () => listeningWorkers(server).length === 2), 'both workers listen')
  const listeners = server.logs.filter(entry => typeof entry.metrics === 'string')
  t.equal(listeners.length, 1, 'one metrics listener')
  t.equal(listeners[0]!.role, 'primary', 'the primary\'s')
  // A connection each, so that both workers may serve some.
  for (let i = 0; i < 6; i++) t.equal((await fetch(`${server.url}/students`, { headers: { connection: 'close' } })).status, 200)

  const scraped = await scrape(t, listeners[0]!.metrics as string)
  t.equal(value(scraped, 'http_request_duration_seconds_count', { method: 'GET', route: '/students', status_code: '200' }), 6, 'every worker\'s requests')
  t.ok(value(scraped, 'db_pool_connections') >= 1, 'the pools of the workers')
  t.ok(scraped.families.has('nodejs_heap_size_used_bytes'), 'and their processes')
  t.equal(series(scraped, 'build_info').length, 1, 'one build_info series')
  t.equal(value(scraped, 'build_info'), 1, 'kept at 1, not summed over the workers')

  const exited = once(server.process, 'exit')
  server.process.kill('SIGTERM')
  t.equal((await exited)[0], 0, 'the primary closes its listener and exits 0')
})

t.test('WORKERS=2 where the metrics port is taken: the primary exits 1 before it starts any worker', async t => {
  const taken = net.createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => taken.close())
  const env = { ...await databaseEnv(t), WORKERS: '2', METRICS_PORT: String((taken.address() as net.AddressInfo).port) }
  await t.rejects(startServer(env), /server exited with 1/)
})
