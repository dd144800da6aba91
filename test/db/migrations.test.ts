import t from 'tap'
import { build } from '../helper.js'

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
})
