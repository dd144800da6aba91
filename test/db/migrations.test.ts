import t from 'tap'
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
  const config = testConfig(await createDatabase(t))
  const apps = await Promise.all([1, 2, 3].map(() => buildApp(t, config)))
  t.equal(apps.length, 3)
  const [{ n }] = await apps[0]!.knex('knex_migrations').count({ n: '*' })
  const files = (await apps[0]!.knex.migrate.list() as [unknown[], unknown[]])[0].length
  t.equal(Number(n), files, 'each migration ran once')
})
