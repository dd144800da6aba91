import t from 'tap'
import { build } from '../helper.js'
import { bearer, client, insertClient, roleWithPermissions, userWithRoles } from './api/accounts.js'

const POOL = 2
const CONCURRENT = 20

t.test(`${CONCURRENT} concurrent writes of each kind on a pool of ${POOL}: no 503, every write done`, async t => {
  // A generous DB_ACQUIRE_TIMEOUT: the waits on a busy machine are long, while a write that
  // held one connection and waited for a second would still wait it out, and answer 503.
  const app = await build(t, config => { config.dbPoolMax = POOL; config.timeouts.dbAcquire = 30_000 })
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const role = await roleWithPermissions(app, 'Contended', [])
  const clientId = await insertClient(app)
  const target = await userWithRoles(app, [])
  const { id: studentId } = (await app.inject({ method: 'POST', url: '/students', payload: { name: 'S', email: 's@example.com', age: 20, dob: '2000-01-01' } })).json()
  const password = 'a long password'

  const kinds: [string, (i: number) => { method: 'POST' | 'PATCH' | 'PUT', url: string, payload: object }][] = [
    ['role PATCH', i => ({ method: 'PATCH', url: `/api/roles/${role.id}`, payload: { permission: i % 2 ? ['client-list'] : ['client-list', 'user-list'] } })],
    ['role POST', i => ({ method: 'POST', url: '/api/roles', payload: { name: `Role ${i}`, permission: ['client-list'] } })],
    ['user POST', i => ({ method: 'POST', url: '/api/users', payload: { name: 'U', email: `pooled-${i}@example.com`, password, c_password: password, roles: ['User'] } })],
    ['user PATCH', i => ({ method: 'PATCH', url: `/api/users/${target.id}`, payload: { name: `Name ${i}`, roles: i % 2 ? ['User'] : [] } })],
    ['client POST', () => ({ method: 'POST', url: '/api/clients', payload: client })],
    ['client PATCH', i => ({ method: 'PATCH', url: `/api/clients/${clientId}`, payload: { city: `City ${i}` } })],
    ['student POST', i => ({ method: 'POST', url: '/students', payload: { name: 'S', email: `s${i}@example.com`, age: 20, dob: '2000-01-01' } })],
    ['student PUT', i => ({ method: 'PUT', url: `/students/${studentId}`, payload: { age: i } })]
  ]
  for (const [kind, request] of kinds) {
    const answers = await Promise.all(Array.from({ length: CONCURRENT }, (_, i) =>
      app.inject({ ...request(i), headers: admin })))
    const statuses = answers.map(res => res.statusCode)
    t.same(statuses.filter(status => status >= 300), [], `${kind}: every one 2xx (${[...new Set(statuses)]})`)
  }
  t.equal(Number((await app.knex('roles').where('name', 'like', 'Role %').count({ n: '*' }).first())!.n), CONCURRENT, 'every role created')
  t.equal(Number((await app.knex('users').where('email', 'like', 'pooled-%').count({ n: '*' }).first())!.n), CONCURRENT, 'every user created')
  // knex's transactions and the prepared queries share the one pool: never more than it holds.
  const { rows: [open] } = await app.pgPool.query<{ n: number }>("select count(*)::int as n from pg_stat_activity where datname = current_database() and application_name = 'student-records-api'")
  t.ok(open!.n <= POOL, `${open!.n} connections of the service open, at most DB_POOL_MAX`)
})
