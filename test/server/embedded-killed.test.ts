import { once } from 'node:events'
import { writeFile } from 'node:fs/promises'
import path from 'node:path'
import t from 'tap'
import { ada } from '../routes/students/fixtures.js'
import { tempDataDir, within } from '../helper.js'
import { embeddedEnv, killPostmaster, listeningWorkers, signalPostmaster, startServer } from './process.js'

// The embedded PostgreSQL killed or stopped under a running service (a file of its own: with
// WORKERS=1 and 2, it takes a good part of tap's time limit for one file).

t.test('the embedded PostgreSQL killed under the service is started again, with its data; one that cannot be ends the process', async t => {
  for (const workers of ['1', '2']) {
    const dataDir = await tempDataDir(t, 'students-server-')
    const server = await startServer({ ...embeddedEnv(dataDir), WORKERS: workers })
    t.teardown(() => server.kill())
    t.ok(await within(60_000, () => listeningWorkers(server).length === Number(workers)), `WORKERS=${workers}: listening`)
    const created = await fetch(`${server.url}/students`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ada) })
    const student = await created.json() as { id: number }

    // Each stop is followed until the service says PostgreSQL runs again, then till it is
    // ready: a readiness check alone may pass on a connection the stop has not reached yet.
    const restarts = () => server.logs.filter(entry => entry.msg === 'the embedded PostgreSQL is running again').length
    await killPostmaster(dataDir)
    t.ok(await within(30_000, () => restarts() === 1), 'started again, saying so')
    t.ok(await within(30_000, async () => (await fetch(`${server.url}/health/ready`)).status === 200), `WORKERS=${workers}: ready again`)
    t.same(await (await fetch(`${server.url}/students/${student.id}`)).json(), student, 'with its data')
    t.ok(server.logs.some(entry => entry.msg === 'the embedded PostgreSQL stopped under the service: starting it again'), 'having said why')
    // Stopped cleanly by hand, it is started again too: SIGINT, the fast shutdown that
    // `pg_ctl stop` sends (which would then wait on the pid file, and so on the server the
    // service may have started again meanwhile, until its time is up).
    await signalPostmaster(dataDir, 'SIGINT')
    t.ok(await within(30_000, () => restarts() === 2), 'stopped cleanly, started again')
    t.ok(await within(30_000, async () => (await fetch(`${server.url}/health/ready`)).status === 200), `WORKERS=${workers}: ready again after a fast shutdown`)

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
