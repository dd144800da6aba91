import { once } from 'node:events'
import { readFile, stat } from 'node:fs/promises'
import path from 'node:path'
import t from 'tap'
import { EmbeddedPostgres } from '../../lib/db/embedded-postgres.js'
import { tempDataDir, within } from '../helper.js'
import { embeddedEnv, listeningWorkers, sleep, startServer } from './process.js'

// The embedded PostgreSQL at shutdown: the watch that restarts it stops first.

t.test('a PostgreSQL stopped during shutdown is not started again, and none is left running; one process or several', async t => {
  for (const workers of ['1', '2']) {
    const dataDir = await tempDataDir(t, 'students-server-')
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
