import t from 'tap'
import pg from 'pg'
import { build, buildApp, createDatabase, testConfig } from '../helper.js'

t.test('migrations roll back and apply again', async t => {
  const app = await build(t)
  const hasStudents = () => app.knex.schema.hasTable('students')
  t.ok(await hasStudents(), 'applied at start-up')

  await app.knex.migrate.rollback(undefined, true)
  t.notOk(await hasStudents(), 'rolled back')

  await app.knex.migrate.latest()
  t.ok(await hasStudents(), 'applied again')
  const [, pending] = await app.knex.migrate.list() as [unknown[], unknown[]]
  t.same(pending, [], 'nothing pending')
  const { rows } = await app.knex.raw<{ rows: { relpersistence: string }[] }>("select relpersistence from pg_class where relname = 'rate_limits'")
  t.equal(rows[0]!.relpersistence, 'u', 'the attempt counters are unlogged')
})

t.test('instances starting together on an empty database migrate it once, and all start', async t => {
  // Three start-ups at once beside the suite's other files: a connection may take more than
  // DB_CONNECT_TIMEOUT's or DB_ACQUIRE_TIMEOUT's 2 s to open (one timed out so in CI), which is
  // not what this tests.
  const config = testConfig(await createDatabase(t), settings => { settings.timeouts.dbConnect = 15_000; settings.timeouts.dbAcquire = 15_000 })
  // All start: a build that failed would reject.
  const apps = await Promise.all([1, 2, 3].map(() => buildApp(t, config)))
  const [{ n }] = await apps[0]!.knex('knex_migrations').count({ n: '*' })
  const files = (await apps[0]!.knex.migrate.list() as [unknown[], unknown[]])[0].length
  t.equal(Number(n), files, 'each migration ran once')
})

t.test('an instance waits for another\'s migration however long it takes: past Fastify\'s 10 s for loading plugins, past DB_STATEMENT_TIMEOUT', async t => {
  const db = await createDatabase(t)
  const base = testConfig(db)
  // A request's statement limit, which start-up's statements are not held to.
  const config = testConfig(db, { timeouts: { ...base.timeouts, dbStatement: 1_000 } })
  // Another instance's migration: the advisory lock of plugins/external/knex.ts, held for 11 s.
  const other = new pg.Client(db)
  await other.connect()
  t.teardown(() => other.end())
  await other.query('select pg_advisory_lock(7355608)')
  const release = setTimeout(() => { other.query('select pg_advisory_unlock(7355608)').catch(() => {}) }, 11_000)
  t.teardown(() => clearTimeout(release))

  const started = Date.now()
  const app = await buildApp(t, config)
  t.ok(Date.now() - started >= 11_000, 'it waited for the lock')
  t.ok(await app.knex.schema.hasTable('students'), 'then migrated and started')
})

t.test('users.email_key: filled in for the users already there, and for writes of the previous version', async t => {
  const app = await build(t)
  // Back to the schema before the column, with users written then.
  while ((await app.knex.migrate.currentVersion()) >= '20261123010000') await app.knex.migrate.down()
  const ids = await app.knex('users').insert([
    { name: 'A', email: 'Ada@Example.com', password: 'x' },
    { name: 'B', email: '\uFF22ob@example.com', password: 'x' }
  ]).returning('id')
  await app.knex.migrate.latest()
  const keys = async () => (await app.knex('users').whereIn('id', ids.map(row => row.id)).orderBy('id').select('email_key')).map(row => row.email_key)
  t.same(await keys(), ['ada@example.com', 'bob@example.com'], 'the users already there')

  // The previous version, still serving during a rolling deploy, writes no email_key.
  const [{ id }] = await app.knex('users').insert({ name: 'C', email: 'Cy@Example.com', password: 'x' }).returning('id')
  await app.knex('users').where({ id: ids[0]!.id }).update({ email: 'Ada.New@Example.com' })
  t.same(await keys(), ['ada.new@example.com', 'bob@example.com'], 'an e-mail changed without its key')
  t.equal((await app.knex('users').where({ id }).first()).email_key, 'cy@example.com', 'a user inserted without one')
})
