import { once } from 'node:events'
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { ada } from '../routes/students/fixtures.js'
import { EmbeddedPostgres } from '../../lib/db/embedded-postgres.js'
import { within } from '../helper.js'
import { embeddedEnv, listeningWorkers, sleep, startServer } from './process.js'

// The embedded PostgreSQL stopped under a running service: apart from embedded.test.ts, so that
// each file stays well within tap's time limit for one file.

/** Kills the embedded PostgreSQL's postmaster outright, as a crash or the OOM killer would. */
async function killPostmaster (dataDir: string): Promise<void> {
  const pid = Number((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
  process.kill(pid, 'SIGKILL')
}

t.test('the embedded PostgreSQL killed under the service is started again, with its data; one that cannot be ends the process', async t => {
  for (const workers of ['1', '2']) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'students-server-'))
    await chmod(dataDir, 0o755)
    t.teardown(() => rm(dataDir, { recursive: true, force: true }))
    const server = await startServer({ ...embeddedEnv(dataDir), WORKERS: workers })
    t.teardown(() => server.kill())
    t.ok(await within(60_000, () => listeningWorkers(server).length === Number(workers)), `WORKERS=${workers}: listening`)
    const created = await fetch(`${server.url}/students`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ada) })
    const student = await created.json() as { id: number }

    await killPostmaster(dataDir)
    t.ok(await within(30_000, async () => (await fetch(`${server.url}/health/ready`)).status === 200), `WORKERS=${workers}: ready again`)
    t.same(await (await fetch(`${server.url}/students/${student.id}`)).json(), student, 'with its data')
    t.ok(server.logs.some(entry => entry.msg === 'the embedded PostgreSQL stopped under the service: starting it again'), 'said so')
    t.ok(server.logs.some(entry => entry.msg === 'the embedded PostgreSQL is running again'))
    // Stopped cleanly by hand (pg_ctl stop), it is started again too.
    await new EmbeddedPostgres(dataDir).stop()
    t.ok(await within(30_000, async () => (await fetch(`${server.url}/health/ready`)).status === 200), `WORKERS=${workers}: ready again after pg_ctl stop`)

    // A data folder PostgreSQL no longer accepts, then killed: the process gives up, saying why,
    // after six tries spread over about 15 seconds.
    await writeFile(path.join(dataDir, 'postgres', 'PG_VERSION'), '1\n')
    const exited = once(server.process, 'exit')
    await killPostmaster(dataDir)
    const killedAt = Date.now()
    const [code] = await exited
    t.equal(code, 1, `WORKERS=${workers}: exits 1, for a supervisor to act`)
    t.ok(Date.now() - killedAt >= 15_000, 'not before the tries have taken 15 seconds')
    t.same(server.logs.filter(entry => entry.msg === 'the embedded PostgreSQL did not start; trying again').map(entry => entry.retryInMs), [500, 1_000, 2_000, 4_000, 8_000], 'each try later than the last')
    t.ok(server.logs.some(entry => entry.level === 60 && entry.msg === 'the embedded PostgreSQL could not be started again: exiting'), 'saying why')
    t.equal((await fetch(`${server.url}/health/live`).catch(() => undefined))?.status, undefined, 'not live any more')
  }
})

t.test('a deleted cluster is not created again empty under the service: it exits 1, saying why', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'students-server-'))
  await chmod(dataDir, 0o755)
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const server = await startServer(embeddedEnv(dataDir))
  t.teardown(() => server.kill())
  const pid = Number((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
  const exited = once(server.process, 'exit')
  await rm(path.join(dataDir, 'postgres'), { recursive: true, force: true })
  process.kill(pid, 'SIGKILL')
  const [code] = await exited
  t.equal(code, 1, 'exits 1')
  t.match(server.logs.find(entry => entry.level === 60), { msg: 'the embedded PostgreSQL could not be started again: exiting', err: { message: /cluster .* is gone/ } }, 'saying why')
  await t.rejects(stat(path.join(dataDir, 'postgres', 'PG_VERSION')), 'no empty cluster was made')
  t.notOk(server.logs.some(entry => entry.msg === 'the embedded PostgreSQL is running again'))
})

t.test('a PostgreSQL stopped during shutdown is not started again, and none is left running; one process or several', async t => {
  for (const workers of ['1', '2']) {
    const dataDir = await mkdtemp(path.join(os.tmpdir(), 'students-server-'))
    await chmod(dataDir, 0o755)
    t.teardown(() => rm(dataDir, { recursive: true, force: true }))
    const server = await startServer({ ...embeddedEnv(dataDir), WORKERS: workers, SHUTDOWN_DELAY: '3s' })
    t.teardown(() => server.kill())
    t.ok(await within(60_000, () => listeningWorkers(server).length === Number(workers)), `WORKERS=${workers}: listening`)
    const pid = Number((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
    const exited = once(server.process, 'exit')
    // As a supervisor stopping the whole service would (systemd's KillMode=control-group).
    server.process.kill('SIGTERM')
    await sleep(200)
    await new EmbeddedPostgres(dataDir).stop()
    const [code] = await exited
    t.equal(code, 0, `WORKERS=${workers}: exits 0`)
    t.notOk(server.logs.some(entry => /stopped under the service|running again|did not start/.test(String(entry.msg))), 'nothing was restarted')
    await t.rejects(stat(path.join(dataDir, 'postgres', 'postmaster.pid')), 'no PostgreSQL left running')
    t.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, 'its postmaster is gone')
  }
})

t.test('the watch stopped during the pause between tries ends at once, and tries no more', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'students-server-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  // No cluster in this folder: every start fails.
  const messages: string[] = []
  const log = { error: (_: object, message: string) => { messages.push(message) }, info: (_: object, message: string) => { messages.push(message) } }
  let gaveUp = false
  const stop = new EmbeddedPostgres(dataDir).keepRunning(log, () => { gaveUp = true }, { intervalMs: 50 })
  t.ok(await within(10_000, () => messages.includes('the embedded PostgreSQL did not start; trying again')), 'a try failed')
  const stopping = Date.now()
  await stop()
  t.ok(Date.now() - stopping < 400, 'without waiting out the pause')
  const seen = messages.length
  await sleep(1_000)
  t.equal(messages.length, seen, 'no try after')
  t.notOk(gaveUp)
})
