import { chmod, mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import t from 'tap'
import { EmbeddedPostgres } from '../../../lib/db/embedded-postgres.js'

t.test('initialises once, starts, is reused while running, and stops', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'embedded-pg-'))
  await chmod(dataDir, 0o755)
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const server = new EmbeddedPostgres(dataDir)
  t.teardown(() => server.stop())
  const pidFile = path.join(server.pgdata, 'postmaster.pid')

  t.equal(await server.start(), true, 'started')
  const pid = (await readFile(pidFile, 'utf8')).split('\n')[0]
  const client = new pg.Client(server.connection)
  await client.connect()
  const { rows } = await client.query('select current_setting(\'listen_addresses\') as listen, current_setting(\'server_encoding\') as encoding')
  await client.end()
  t.same(rows, [{ listen: '', encoding: 'UTF8' }], 'a Unix socket only, UTF-8')

  t.equal(await server.start(), false, 'already running')
  t.equal((await readFile(pidFile, 'utf8')).split('\n')[0], pid, 'a running server is reused')

  await server.stop()
  await t.rejects(stat(pidFile), 'stopped')
  await t.rejects(stat(server.socketDir), 'its socket folder removed')
  await t.resolves(server.stop(), 'stopping a stopped server does nothing')
})
