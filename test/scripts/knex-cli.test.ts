import { execFile } from 'node:child_process'
import { stat } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { EmbeddedPostgres } from '../../lib/db/embedded-postgres.js'
import { startServer } from '../server/process.js'
import { tempDataDir } from '../helper.js'

const run = promisify(execFile)

/** `npm run knex -- <args>` on the TypeScript knexfile, with no database settings: the embedded PostgreSQL of dataDir. */
function knexCli (dataDir: string, ...args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir }
  delete env.DB_HOST
  return run(process.execPath, [...process.execArgv, 'node_modules/knex/bin/cli.js', '--knexfile', 'knexfile.ts', ...args], { env })
}

t.test('the knex CLI works on the embedded database, whether a server runs it or not', async t => {
  const dataDir = await tempDataDir(t, 'students-knex-')
  const embedded = new EmbeddedPostgres(dataDir)

  const alone = await knexCli(dataDir, 'migrate:list')
  t.match(alone.stdout, /Pending Migration file\/files\.\n20261122000000_create_students\n/, 'no server: the migrations are listed by name')
  await t.rejects(stat(path.join(embedded.pgdata, 'postmaster.pid')), 'and the database it started for itself is stopped again')
  await t.rejects(stat(embedded.socketDir), 'with its socket folder')

  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir }
  delete env.DB_HOST
  const server = await startServer(env)
  t.teardown(() => server.kill())
  const beside = await knexCli(dataDir, 'migrate:list')
  t.match(beside.stdout, /No Pending Migration files Found/, 'beside a running server: its database, migrated')
  t.equal((await fetch(`${server.url}/health/ready`)).status, 200, 'and the server keeps its database')
  server.process.kill('SIGTERM')
})
