import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { promisify } from 'node:util'
import t from 'tap'
import { buildApp, createDatabase, testConfig, TEST_JWT_SECRET, within } from '../helper.js'
import { databaseProxy } from '../faults/database-proxy.js'
import { databaseEnv, freePort, startServer } from '../server/process.js'

const run = promisify(execFile)

t.test('MIGRATE=false: an instance on a database not migrated refuses to start, naming the command; after npm run migrate it serves', async t => {
  const db = await createDatabase(t)
  const config = testConfig(db, { migrate: false })
  const refused = await buildApp(t, config).catch((error: Error) => error)
  t.match(refused, { message: /^The database lacks \d+ migration\(s\) of this release \(20261122000000_create_students, .*\): run npm run migrate, or start with MIGRATE=true$/ })

  const env = { ...process.env, JWT_SECRET: TEST_JWT_SECRET, DB_HOST: db.host, DB_PORT: String(db.port), DB_NAME: db.database, DB_USER: db.user, DB_PASSWORD: db.password }
  const migrate = () => run(process.execPath, [...process.execArgv, 'scripts/migrate.ts'], { env })
  t.match((await migrate()).stdout, /^Migrated: 20261122000000_create_students, /, 'migrated')
  t.match((await migrate()).stdout, /^The database is at the latest schema already$/m, 'run again: nothing to do')

  const app = await buildApp(t, config)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: { name: 'Ada', email: 'ada@example.com', age: 36, dob: '1815-12-10' } })).statusCode, 201, 'serves on the migrated schema')
})

t.test('MIGRATE=false over real HTTP: the process exits 1 instead of serving', async t => {
  const env = { ...await databaseEnv(t), MIGRATE: 'false' }
  const failed = await startServer(env).catch((error: Error) => error)
  t.match(failed, { message: 'server exited with 1' })
})

t.test('npm run migrate, started beside a database that answers seconds later (compose\'s migrate step): it waits, saying so, then migrates', async t => {
  const db = await createDatabase(t)
  const port = await freePort()
  const env = { ...process.env, JWT_SECRET: TEST_JWT_SECRET, DB_HOST: '127.0.0.1', DB_PORT: String(port), DB_NAME: db.database, DB_USER: db.user, DB_PASSWORD: db.password }
  const migrate = spawn(process.execPath, [...process.execArgv, 'scripts/migrate.ts'], { env })
  t.teardown(() => migrate.kill('SIGKILL'))
  let [stdout, stderr] = ['', '']
  migrate.stdout.on('data', chunk => { stdout += chunk })
  migrate.stderr.on('data', chunk => { stderr += chunk })
  const exited = once(migrate, 'exit')
  const waiting = () => stderr.match(/^the database does not answer yet \(connect ECONNREFUSED 127\.0\.0\.1:\d+\); trying again in \d+ ms, for up to DB_STARTUP_WAIT \(60000 ms\) in all$/gm) ?? []
  t.ok(await within(60_000, () => waiting().length >= 2), 'refused, and tried again')
  // PostgreSQL answers on that port from now on.
  await databaseProxy(t, db, { port })
  t.same(await exited, [0, null], 'it migrated and exited 0')
  t.match(stdout, /^Migrated: 20261122000000_create_students, /)
})
