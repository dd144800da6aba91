import { execFileSync } from 'node:child_process'
import { chown, mkdtemp, readFile, rm, stat } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import t from 'tap'
import { EmbeddedPostgres } from '../../../lib/db/embedded-postgres.js'
import { tempDataDir } from '../../helper.js'

t.test('a server found running with its sockets elsewhere (an earlier release\'s) is reused where it listens', async t => {
  const dataDir = await tempDataDir(t, 'embedded-pg-')
  const first = new EmbeddedPostgres(dataDir, { maxConnections: 150 })
  await first.start()
  const told = new pg.Client(first.connection)
  await told.connect()
  t.equal((await told.query('show max_connections')).rows[0].max_connections, '150', 'started with the connections it was told')
  await told.end()
  await first.stop()
  // Started again as an earlier release did: its socket in a folder of the temporary folder.
  const elsewhere = await mkdtemp(path.join(os.tmpdir(), 'pg-elsewhere-'))
  t.teardown(() => rm(elsewhere, { recursive: true, force: true }))
  const owner = process.getuid?.() === 0
    ? { uid: Number(execFileSync('id', ['-u', 'postgres'])), gid: Number(execFileSync('id', ['-g', 'postgres'])) }
    : {}
  if (owner.uid !== undefined) await chown(elsewhere, owner.uid, owner.gid!)
  const { pg_ctl: pgCtl } = await import(`@embedded-postgres/${process.platform}-${process.arch}`) as { pg_ctl: string }
  execFileSync(pgCtl, ['start', '--wait', `--pgdata=${first.pgdata}`, `--log=${path.join(first.pgdata, 'server.log')}`,
    `--options=-c listen_addresses='' -c unix_socket_directories='${elsewhere}' -c port=5432`], { ...owner, stdio: 'ignore' })

  const server = new EmbeddedPostgres(dataDir)
  t.teardown(() => server.stop())
  t.equal(await server.start(), false, 'the running server is reused')
  t.equal(server.socketDir, elsewhere, 'where it listens')
  const client = new pg.Client(server.connection)
  await client.connect()
  t.same((await client.query('select 1 as one')).rows, [{ one: 1 }])
  await client.end()
})

t.test('initialises once, starts, is reused while running, and stops', async t => {
  const dataDir = await tempDataDir(t, 'embedded-pg-')
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
