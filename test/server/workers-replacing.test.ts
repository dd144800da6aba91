import { once } from 'node:events'
import t, { type Test } from 'tap'
import { within } from '../helper.js'
import { childPids, databaseEnv, databaseRelay, listeningWorkers, startServer, type ServerProcess } from './process.js'

const gone = (pid: number) => { try { process.kill(pid, 0); return false } catch { return true } }

/** What a shutdown that went well shows: exit 0, every worker gone, nothing logged at error or worse meanwhile. */
async function stoppedCleanly (t: Test, server: ServerProcess, workers: number[]) {
  const exited = once(server.process, 'exit')
  const before = server.logs.length
  server.process.kill('SIGTERM')
  const [code] = await exited
  const shutdown = server.logs.slice(before)
  t.equal(code, 0, 'the primary exits 0')
  t.match(shutdown.filter(entry => entry.role === 'primary'), [{ reason: 'SIGTERM', cancelledRestarts: 0, msg: /^shutting down/ }], 'saying what it does, in one line')
  t.same(shutdown.filter(entry => Number(entry.level) >= 50), [], 'nothing failed')
  for (const pid of workers) t.ok(await within(2_000, () => gone(pid)), `worker ${pid} is gone`)
}

t.test('WORKERS=2: SIGTERM just after a replacement worker is forked stops it too, and the primary exits 0', async t => {
  const server = await startServer({ ...await databaseEnv(t), WORKERS: '2' })
  t.teardown(() => server.kill())
  t.ok(await within(60_000, () => listeningWorkers(server).length === 2), 'both workers listen')
  const [first, second] = listeningWorkers(server) as [number, number]
  process.kill(first, 'SIGKILL')
  let replacement: number | undefined
  t.ok(await within(60_000, async () => {
    replacement = (await childPids(server.process.pid!)).find(pid => pid !== first && pid !== second)
    return replacement !== undefined
  }), 'a replacement is forked')
  await stoppedCleanly(t, server, [second, replacement!])
})

t.test('WORKERS=2: SIGTERM while a replacement worker connects to the database stops its start-up, and the primary exits 0', async t => {
  const relay = await databaseRelay(t, await databaseEnv(t))
  // Its connection held far longer than the test takes: no timeout and retry logged meanwhile.
  const server = await startServer({ ...relay.env, WORKERS: '2', DB_CONNECT_TIMEOUT: '60s' })
  t.teardown(() => server.kill())
  t.ok(await within(60_000, () => listeningWorkers(server).length === 2), 'both workers listen')
  const [first, second] = listeningWorkers(server) as [number, number]
  // From now on the database does not answer a new connection: the replacement waits on its first.
  relay.hold()
  process.kill(first, 'SIGKILL')
  let replacement: number | undefined
  t.ok(await within(60_000, async () => {
    replacement = (await childPids(server.process.pid!)).find(pid => pid !== first && pid !== second)
    return replacement !== undefined && relay.held() > 0
  }), 'the replacement is forked, and a connection is held')
  await stoppedCleanly(t, server, [second, replacement!])
  const said = server.logs.filter(entry => entry.pid === replacement)
  t.match(said, [{ msg: 'shutting down during start-up: nothing is served yet', signal: 'SIGTERM' }], 'the replacement said why it stopped')
  t.equal(said.length, 1, 'and nothing else')
})
