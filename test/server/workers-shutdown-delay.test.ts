import { once } from 'node:events'
import t from 'tap'
import { within } from '../helper.js'
import { databaseEnv, listeningWorkers, startServer } from './process.js'

t.test('WORKERS=2 with SHUTDOWN_DELAY: the workers serve on through it, not ready, and the primary waits for them and exits 0', async t => {
  // A delay longer than SHUTDOWN_GRACE and its 2 s: the primary must wait for the delay too.
  // The 8 s past the delay are the workers' to stop in, on a machine however busy.
  const server = await startServer({ ...await databaseEnv(t), WORKERS: '2', SHUTDOWN_DELAY: '10s', SHUTDOWN_GRACE: '6s' })
  t.teardown(() => server.kill())
  t.ok(await within(60_000, () => listeningWorkers(server).length === 2))
  const exited = once(server.process, 'exit')
  server.process.kill('SIGTERM')
  t.ok(await within(5_000, () => server.logs.filter(entry => entry.msg === 'shutting down: /health/ready answers 503; serving on for SHUTDOWN_DELAY').length === 2), 'both workers begin the delay')
  // A connection each, so that both workers may answer.
  for (let i = 0; i < 4; i++) {
    t.equal((await fetch(`${server.url}/health/ready`, { headers: { connection: 'close' } })).status, 503, 'not ready')
    t.equal((await fetch(`${server.url}/students?limit=1`, { headers: { connection: 'close' } })).status, 200, 'still serving')
  }
  const [code] = await exited
  t.equal(code, 0)
  t.notOk(server.logs.some(entry => entry.msg === 'the workers did not stop in time'))
})
