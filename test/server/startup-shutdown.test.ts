import { once } from 'node:events'
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import t, { type Test } from 'tap'
import { within } from '../helper.js'
import { databaseEnv, databaseRelay, embeddedEnv, spawnServer } from './process.js'

/** Starts server.ts with its output collected: its JSON log lines, and whatever it writes on stderr. */
function spawnCollected (env: NodeJS.ProcessEnv) {
  const child = spawnServer({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env }, 'pipe')
  const logs: Record<string, unknown>[] = []
  readline.createInterface({ input: child.stdout! }).on('line', line => logs.push(JSON.parse(line)))
  let stderr = ''
  child.stderr!.on('data', chunk => { stderr += chunk })
  const exited = once(child, 'exit').then(async ([code, signal]) => {
    // Until the pipes are read to their end.
    await new Promise(resolve => setImmediate(resolve))
    return { code, signal, logs, stderr }
  })
  t.teardown(() => { try { process.kill(-child.pid!, 'SIGKILL') } catch {} })
  return { child, logs, exited }
}

/** The one line a process stopped during start-up writes. */
function saysWhy (t: Test, logs: Record<string, unknown>[]) {
  t.match(logs, [{ msg: 'shutting down during start-up: nothing is served yet', signal: 'SIGTERM' }], 'one line says why')
  t.equal(logs.length, 1, 'and nothing else')
}

t.test('SIGTERM right after the process is spawned: it ends, with no crash', async t => {
  const { child, exited } = spawnCollected(await databaseEnv(t))
  child.kill('SIGTERM')
  const { code, signal, logs, stderr } = await exited
  t.equal(stderr, '', 'no stack trace')
  // Before Node has run any of its code, a process cannot catch a signal and ends by it.
  if (signal === null) {
    t.equal(code, 0)
    saysWhy(t, logs)
  } else {
    t.equal(signal, 'SIGTERM')
    t.same(logs, [])
  }
})

t.test('SIGTERM while start-up waits on a database that does not answer: exit 0, one line, no crash', async t => {
  const relay = await databaseRelay(t, await databaseEnv(t), { holding: true })
  // Its connection held far longer than the test takes: no timeout and retry logged meanwhile.
  const { child, exited } = spawnCollected({ ...relay.env, DB_CONNECT_TIMEOUT: '60s' })
  t.ok(await within(60_000, () => relay.held() > 0), 'it connects')
  child.kill('SIGTERM')
  const { code, logs, stderr } = await exited
  t.equal(code, 0)
  saysWhy(t, logs)
  t.equal(stderr, '', 'no stack trace')
})

t.test('SIGTERM while the embedded PostgreSQL is being created: it is started, then stopped; exit 0, one line', async t => {
  const dataDir = mkdtempSync(path.join(os.tmpdir(), 'startup-shutdown-'))
  // For the postgres user, when the tests run as root.
  chmodSync(dataDir, 0o755)
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const pgdata = path.join(dataDir, 'postgres')
  const { child, exited } = spawnCollected(embeddedEnv(dataDir))
  t.ok(await within(60_000, () => existsSync(pgdata)), 'the cluster is being created')
  child.kill('SIGTERM')
  const { code, logs, stderr } = await exited
  t.equal(code, 0)
  saysWhy(t, logs)
  t.equal(stderr, '', 'no stack trace')
  t.ok(existsSync(path.join(pgdata, 'PG_VERSION')), 'the cluster was created whole')
  t.notOk(existsSync(path.join(pgdata, 'postmaster.pid')), 'and its PostgreSQL is not left running')
})
