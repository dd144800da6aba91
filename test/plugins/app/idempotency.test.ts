import { createHmac } from 'node:crypto'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import pg from 'pg'
import { build, within } from '../../helper.js'
import { bearer, client, PASSWORD, userWithRoles } from '../../routes/api/accounts.js'
import { ada, student } from '../../routes/students/fixtures.js'

const key = (name: string) => ({ 'idempotency-key': name })

t.test('a repeat with the same key and request gets the first answer again, and writes nothing', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const creates = [
    { url: '/students', headers: {}, payload: student(1), table: 'students' },
    { url: '/api/v1/students', headers: {}, payload: student(2), table: 'students' },
    { url: '/api/clients', headers: admin, payload: client, table: 'clients' },
    { url: '/api/roles', headers: admin, payload: { name: 'Editor', permission: ['client-list'] }, table: 'roles' },
    { url: '/api/users', headers: admin, payload: { name: 'Bob', email: 'bob@example.com', password: PASSWORD, c_password: PASSWORD }, table: 'users' },
    { url: '/api/register', headers: {}, payload: { name: 'Eve', email: 'eve@example.com', password: PASSWORD, c_password: PASSWORD }, table: 'users' }
  ]
  for (const [i, { url, headers, payload, table }] of creates.entries()) {
    await t.test(url, async t => {
      // The admin's keys are theirs on every route: one each.
      const k = `k-${i}`
      const count = async () => Number((await app.knex(table).count({ n: '*' }))[0]!.n)
      const before = await count()
      const first = await app.inject({ method: 'POST', url, headers: { ...headers, ...key(k) }, payload })
      t.equal(first.statusCode, 201)
      t.notOk(first.headers['idempotent-replayed'], 'the first answer is no replay')
      const again = await app.inject({ method: 'POST', url, headers: { ...headers, ...key(k) }, payload })
      t.equal(again.statusCode, 201, 'the same status')
      t.equal(again.headers['idempotent-replayed'], 'true')
      t.equal(again.body, first.body, 'the same body')
      t.equal(again.headers.location, first.headers.location, 'the same Location')
      t.equal(again.headers.etag, first.headers.etag, 'the same ETag')
      t.equal(await count(), before + 1, 'one record')

      const other = await app.inject({ method: 'POST', url, headers: { ...headers, ...key(k) }, payload: { ...payload, name: 'Someone else' } })
      t.equal(other.statusCode, 422, 'the key with another body')
      t.match(other.json(), { success: false, statusCode: 422, error: 'Unprocessable Entity', message: /another request/ })
      t.equal(await count(), before + 1, 'nothing written')
    })
  }
  const elsewhere = await app.inject({ method: 'POST', url: '/api/v1/students', payload: student(1), headers: key('k-0') })
  t.equal(elsewhere.statusCode, 409, 'open routes keep keys per route: the other variant runs the create (a taken e-mail)')
  const admins = await app.inject({ method: 'POST', url: '/api/roles', headers: { ...admin, ...key('k-2') }, payload: { name: 'Other', permission: [] } })
  t.equal(admins.statusCode, 422, 'a caller\'s key used on another route is another request')
})

t.test('keys are the caller\'s: another user\'s key of the same name never replays', async t => {
  const app = await build(t)
  const one = bearer((await userWithRoles(app, ['User'])).token)
  const other = bearer((await userWithRoles(app, ['User'])).token)
  const first = await app.inject({ method: 'POST', url: '/api/clients', headers: { ...one, ...key('shared') }, payload: client })
  const second = await app.inject({ method: 'POST', url: '/api/clients', headers: { ...other, ...key('shared') }, payload: client })
  t.equal(second.statusCode, 201)
  t.notOk(second.headers['idempotent-replayed'])
  t.not(second.json().data.id, first.json().data.id, 'a record of its own')
  const onAnotherRoute = await app.inject({ method: 'POST', url: '/api/roles', headers: { ...one, ...key('shared') }, payload: { name: 'X', permission: [] } })
  t.equal(onAnotherRoute.statusCode, 403, 'the permission check comes first')
})

t.test('an answer that is not 2xx is not kept: the key stays free', async t => {
  const app = await build(t)
  await app.inject({ method: 'POST', url: '/students', payload: ada })
  const taken = await app.inject({ method: 'POST', url: '/students', headers: key('retry-me'), payload: ada })
  t.equal(taken.statusCode, 409)
  const invalid = await app.inject({ method: 'POST', url: '/students', headers: key('retry-me'), payload: { ...ada, age: -1 } })
  t.equal(invalid.statusCode, 400)
  const fixed = await app.inject({ method: 'POST', url: '/students', headers: key('retry-me'), payload: { ...ada, email: 'ada2@example.com' } })
  t.equal(fixed.statusCode, 201, 'the key runs a new request')
  t.notOk(fixed.headers['idempotent-replayed'])
})

t.test('an expired key is a new key; expired keys are swept', async t => {
  const app = await build(t, { idempotencyTtlSeconds: 1 })
  const first = await app.inject({ method: 'POST', url: '/students', headers: key('short'), payload: student(1) })
  t.equal(first.statusCode, 201)
  await app.knex('students').where({ id: first.json().id }).delete()
  t.ok(await within(3_000, async () => {
    const again = await app.inject({ method: 'POST', url: '/students', headers: key('short'), payload: student(1) })
    if (again.statusCode !== 201 || again.headers['idempotent-replayed']) return false
    t.not(again.json().id, first.json().id, 'a new record')
    return true
  }), 'after IDEMPOTENCY_TTL the create runs again')
  await app.inject({ method: 'POST', url: '/students', headers: key('another'), payload: student(2) })
  await app.knex('idempotency_keys').update({ expires_at: app.knex.raw('now() - interval \'1 second\'') })
  await app.idempotency.sweep()
  t.same(await app.knex('idempotency_keys').select('key'), [], 'no expired key is left')
})

t.test('a key that is not 1-255 printable ASCII characters gets 400, and nothing is written', async t => {
  const app = await build(t)
  for (const bad of ['x'.repeat(256), 'naïve', 'tab\there', 'nul\u0001']) {
    const res = await app.inject({ method: 'POST', url: '/students', headers: { 'idempotency-key': bad }, payload: ada })
    t.equal(res.statusCode, 400, JSON.stringify(bad).slice(0, 20))
    t.match(res.json(), { statusCode: 400, data: { 'idempotency-key': [String] } })
  }
  t.same(await app.knex('students').select('id'), [])
})

t.test('20 concurrent POSTs with one key over HTTP: one record, one 201 that is no replay; the rest replays (one INSERT) or replays and 409s (several statements)', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const creates = [
    // A repeat's INSERT waits for the first's e-mail, then finds its key.
    { url: '/students', headers: {}, payload: ada, table: 'students', oneInsert: true },
    // No unique column: a repeat's INSERT waits on the first's key.
    { url: '/api/clients', headers: admin, payload: client, table: 'clients', oneInsert: true },
    { url: '/api/roles', headers: admin, payload: { name: 'Editor', permission: [] }, table: 'roles', oneInsert: false }
  ]
  for (const { url, headers, payload, table, oneInsert } of creates) {
    await t.test(url, async t => {
      const count = async () => Number((await app.knex(table).count({ n: '*' }))[0]!.n)
      const before = await count()
      const answers = await Promise.all(Array.from({ length: 20 }, () => fetch(`http://127.0.0.1:${port}${url}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': `burst ${url}` },
        body: JSON.stringify(payload)
      }).then(async res => ({ status: res.status, replayed: res.headers.get('idempotent-replayed'), retryAfter: res.headers.get('retry-after'), body: await res.text() }))))
      const fresh = answers.filter(answer => answer.status === 201 && answer.replayed === null)
      t.equal(fresh.length, 1, 'one create ran')
      for (const answer of answers) {
        if (answer.status === 201) t.equal(answer.body, fresh[0]!.body, 'every 201 is that answer')
        else {
          t.notOk(oneInsert, 'a repeat of one INSERT waits for it and gets its answer')
          t.equal(answer.status, 409, 'the others were told it is under way')
          t.equal(answer.retryAfter, '1', 'with Retry-After')
        }
      }
      t.equal(await count(), before + 1, 'one record')
    })
  }
})

// The other request: a connection that holds the table in a transaction, so that this one's
// insert waits, and commits the key meanwhile.
async function holdTable (t: Test, app: FastifyInstance, table: string): Promise<{ release: () => Promise<unknown> }> {
  const other = new pg.Client(app.config.db!)
  await other.connect()
  t.teardown(() => other.end())
  await other.query('begin')
  await other.query(`lock table ${table} in exclusive mode`)
  return { release: () => other.query('commit') }
}
const waitsOnInsertInto = (app: FastifyInstance, table: string) => within(5_000, async () =>
  (await app.knex.raw("select 1 from pg_stat_activity where wait_event_type = 'Lock' and query like ?", [`%insert into "${table}"%`])).rows.length > 0)
const keepKey = (app: FastifyInstance, scope: string, key: string, fingerprint: string) =>
  app.knex('idempotency_keys').insert({ scope, key, fingerprint, status: 201, headers: {}, body: '{}', expires_at: app.knex.raw("now() + interval '1 hour'") })

t.test('a create of several statements whose key another request commits after its look-up: 409, and its create is rolled back', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const table = await holdTable(t, app, 'roles')
  const answer = app.inject({ method: 'POST', url: '/api/roles', headers: { ...bearer(admin.token), ...key('raced') }, payload: { name: 'Editor', permission: [] } })
  t.ok(await waitsOnInsertInto(app, 'roles'), 'the create waits')
  const repeat = await app.inject({ method: 'POST', url: '/api/roles', headers: { ...bearer(admin.token), ...key('raced') }, payload: { name: 'Editor', permission: [] } })
  t.equal(repeat.statusCode, 409, 'a repeat while it runs: 409 at once')
  t.equal(repeat.headers['retry-after'], '1')
  await keepKey(app, `user ${admin.id}`, 'raced', 'another request')
  await table.release()
  const res = await answer
  t.equal(res.statusCode, 409)
  t.equal(res.headers['retry-after'], '1')
  t.same(await app.knex('roles').where({ name: 'Editor' }).select('id'), [], 'the create was rolled back')
})

t.test('a create of one INSERT whose key another request commits while it runs: answered as that key\'s repeat, and its insert is rolled back', async t => {
  const app = await build(t)
  await app.inject({ method: 'POST', url: '/students', headers: key('probe'), payload: student(1) })
  const { scope } = await app.knex('idempotency_keys').where({ key: 'probe' }).first('scope')
  const table = await holdTable(t, app, 'students')
  const answer = app.inject({ method: 'POST', url: '/students', headers: key('raced'), payload: student(2) })
  t.ok(await waitsOnInsertInto(app, 'students'), 'the create waits')
  await keepKey(app, scope, 'raced', 'another request')
  await table.release()
  const res = await answer
  t.equal(res.statusCode, 422, 'the key was kept for another request')
  t.same((await app.knex('students').select('email')).map(row => row.email), [student(1).email], 'the create was rolled back')
})

t.test('a key kept with its serialized answer (by a create of several statements, or by the previous version over an expired row) replays that answer first', async t => {
  const app = await build(t)
  const first = await app.inject({ method: 'POST', url: '/students', headers: key('probe'), payload: student(1) })
  const kept = JSON.stringify({ ...first.json(), id: 999, name: 'The Kept Answer' })
  await app.knex('idempotency_keys').where({ key: 'probe' }).update({ headers: { location: '/students/999', etag: '"999"' }, body: kept })
  await app.knex('students').delete()
  const again = await app.inject({ method: 'POST', url: '/students', headers: key('probe'), payload: student(1) })
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal(again.body, kept, 'the kept body, not the kept row')
  t.equal(again.headers.location, '/students/999')
  t.equal(again.headers.etag, '"999"')
  t.not(first.body, again.body)
  t.same(await app.knex('students').select('id'), [], 'nothing written')
})

t.test('a row kept by an INSERT that returned other columns (another version of the service) is not read as this one\'s: 422', async t => {
  const app = await build(t)
  await app.inject({ method: 'POST', url: '/students', headers: key('old'), payload: student(1) })
  await app.knex('idempotency_keys').where({ key: 'old' }).update({ record: app.knex.raw("'an0therMark0 ' || substr(record, 14)") })
  const again = await app.inject({ method: 'POST', url: '/students', headers: key('old'), payload: student(1) })
  t.equal(again.statusCode, 422)
  t.match(again.json(), { success: false, statusCode: 422, message: /another version/ })
  t.notOk(again.headers['idempotent-replayed'])
})

t.test('a caller\'s key kept by a create of one INSERT and expired is a new key on a create of several statements, and the other way round', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const expire = () => app.knex('idempotency_keys').update({ expires_at: app.knex.raw("now() - interval '1 second'") })
  const post = (url: string, payload: object) => app.inject({ method: 'POST', url, headers: { ...admin, ...key('reused') }, payload })
  t.equal((await post('/api/clients', client)).statusCode, 201)
  await expire()
  const role = await post('/api/roles', { name: 'Editor', permission: [] })
  t.equal(role.statusCode, 201, 'the role is created')
  t.notOk(role.headers['idempotent-replayed'])
  t.equal((await post('/api/roles', { name: 'Editor', permission: [] })).body, role.body, 'and its answer kept for the key')
  await expire()
  const other = await post('/api/clients', { ...client, name: 'Other Ltd' })
  t.equal(other.statusCode, 201)
  t.notOk(other.headers['idempotent-replayed'])
  t.equal((await post('/api/clients', { ...client, name: 'Other Ltd' })).body, other.body)
})

t.test('a row kept as text comes back as it was, whatever its characters', async t => {
  const app = await build(t)
  const odd = { name: 'Ada "the Countess", (née Byron) \\ \u00e9\u{1F600}  x', email: 'odd@example.com', age: 36, dob: '1815-12-10' }
  const first = await app.inject({ method: 'POST', url: '/students', headers: key('odd'), payload: odd })
  t.equal(first.statusCode, 201)
  const again = await app.inject({ method: 'POST', url: '/students', headers: key('odd'), payload: odd })
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal(again.body, first.body)
  t.equal(again.json().name, odd.name)
})

t.test('a repeat whose body has its keys in another order is the same request: replayed, not 422; another body is still 422', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const reversed = (payload: object) => Object.fromEntries(Object.entries(payload).reverse())
  const creates = [
    { url: '/students', headers: {}, payload: student(1) },
    { url: '/api/clients', headers: admin, payload: client },
    { url: '/api/roles', headers: admin, payload: { name: 'Editor', permission: ['client-list', 'client-edit'] } },
    { url: '/api/register', headers: {}, payload: { name: 'Eve', email: 'eve@example.com', password: PASSWORD, c_password: PASSWORD } }
  ]
  for (const [i, { url, headers, payload }] of creates.entries()) {
    const post = (body: object, k = `order-${i}`) => app.inject({ method: 'POST', url, headers: { ...headers, ...key(k), 'content-type': 'application/json' }, payload: JSON.stringify(body) })
    const first = await post(payload)
    t.equal(first.statusCode, 201, url)
    const again = await post(reversed(payload))
    t.not(JSON.stringify(reversed(payload)), JSON.stringify(payload), 'the keys come in another order')
    t.equal(again.statusCode, 201, `${url}: the same request`)
    t.equal(again.headers['idempotent-replayed'], 'true')
    t.equal(again.body, first.body, 'the first answer')
    const other = await post({ ...reversed(payload), name: 'Someone else' })
    t.equal(other.statusCode, 422, `${url}: another body`)
  }
  const role = creates[2]!
  const permutation = await app.inject({ method: 'POST', url: role.url, headers: { ...role.headers, ...key('order-2') }, payload: { name: 'Editor', permission: ['client-edit', 'client-list'] } })
  t.equal(permutation.statusCode, 422, 'an array in another order is another request')
})

t.test('a key kept before the canonical fingerprint (an upgrade within IDEMPOTENCY_TTL) still replays the same body text', async t => {
  const app = await build(t)
  const first = await app.inject({ method: 'POST', url: '/students', headers: key('legacy'), payload: student(1) })
  t.equal(first.statusCode, 201)
  const secret = createHmac('sha256', app.config.auth.jwtSecret).update('idempotency keys').digest()
  const legacy = createHmac('sha256', secret).update(`POST /students\n${JSON.stringify(student(1))}`).digest('base64url')
  await app.knex('idempotency_keys').where({ key: 'legacy' }).update({ fingerprint: legacy })
  const again = await app.inject({ method: 'POST', url: '/students', headers: key('legacy'), payload: student(1) })
  t.equal(again.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true', 'the same text matches the old fingerprint')
  t.equal(again.body, first.body)
  const other = await app.inject({ method: 'POST', url: '/students', headers: key('legacy'), payload: { ...student(1), name: 'Someone else' } })
  t.equal(other.statusCode, 422, 'another body does not')
})
