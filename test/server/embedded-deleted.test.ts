import { once } from 'node:events'
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { EmbeddedPostgres } from '../../lib/db/embedded-postgres.js'
import { tempDataDir, within } from '../helper.js'
import { embeddedEnv, sleep, startServer } from './process.js'

// The embedded PostgreSQL's watch: a cluster deleted under the service, a watch stopped between tries.

t.test('a deleted cluster is not created again empty under the service: it exits 1, saying why', async t => {
  const dataDir = await tempDataDir(t, 'students-server-')
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
