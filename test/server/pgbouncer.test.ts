import t from 'tap'
import { createDatabase, TEST_JWT_SECRET, within } from '../helper.js'
import { pgbouncerInstalled, startPgBouncer } from '../setup/pgbouncer.js'
import { freePort, startServer, type ServerProcess } from './process.js'

const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const PASSWORD = 'correct horse battery'

t.test('behind PgBouncer in transaction mode: two instances take concurrent writes, and a logout through one holds on the other within a second',
  { skip: pgbouncerInstalled ? false : 'pgbouncer is not installed (.ci/run installs it)' }, async t => {
    const db = await createDatabase(t)
    // Two server connections for the instances' eight: their transactions take turns on them.
    const pgbouncer = await startPgBouncer(db, await freePort())
    t.teardown(pgbouncer.stop)
    const env = {
      ...process.env,
      JWT_SECRET: TEST_JWT_SECRET,
      DB_HOST: '127.0.0.1',
      DB_PORT: String(pgbouncer.port),
      DB_NAME: db.database,
      DB_USER: db.user,
      DB_PASSWORD: db.password,
      DB_POOLER: 'transaction',
      DB_DIRECT_HOST: db.host,
      DB_DIRECT_PORT: String(db.port),
      DB_POOL_MAX: '4'
    }
    const [one, other] = await Promise.all([startServer(env), startServer(env)]) as [ServerProcess, ServerProcess]
    t.teardown(() => { one.kill(); other.kill() })

    await t.test('concurrent creates through one instance are each read back through the other, as written', async t => {
      const students = Array.from({ length: 60 }, (_, i) => ({ name: `Pooled ${i}`, email: `pooled-${i}@example.com`, age: 20, dob: '2000-02-29' }))
      const created = await Promise.all(students.map(async student => {
        const res = await fetch(`${one.url}/students`, json(student))
        return { status: res.status, body: await res.json() as { id: number, created_at: string } }
      }))
      t.same(created.map(({ status }) => status), students.map(() => 201), 'every create answered 201')
      for (const [i, { body }] of created.entries()) {
        const read = await (await fetch(`${other.url}/students/${body.id}`)).json() as Record<string, unknown>
        t.match(read, { ...students[i], id: body.id, created_at: body.created_at })
      }
      t.match(created[0]!.body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, 'timestamps in UTC')
    })

    await t.test('a logout through one instance is refused by the other within a second', async t => {
      const registered = await fetch(`${one.url}/api/register`, json({ name: 'Pooled', email: 'pooled@example.com', password: PASSWORD, c_password: PASSWORD }))
      t.equal(registered.status, 201)
      const token = ((await registered.json()) as { data: string }).data
      const profile = (server: ServerProcess) => fetch(`${server.url}/api/profile`, { headers: { authorization: `Bearer ${token}` } }).then(res => res.status)
      t.same([await profile(other), await profile(other)], [200, 200], 'remembered by the other instance')
      t.equal((await fetch(`${one.url}/api/logout`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
      t.ok(await within(1_000, async () => await profile(other) === 401), 'refused by the other instance within a second')
    })
  })
