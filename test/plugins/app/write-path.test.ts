import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../../helper.js'
import { ada, variants } from '../../routes/students/fixtures.js'
import { bearer, client, userWithRoles } from '../../routes/api/accounts.js'

interface OutboxRow { resource: string, resource_id: string, action: string, data: Record<string, unknown>, changed: string[] | null, request_id: string, actor_id: string | null }

const outboxOf = (app: FastifyInstance, resource: string, id: number): Promise<OutboxRow[]> =>
  app.knex('change_outbox').where({ resource, resource_id: id }).orderBy('id').select('resource', 'resource_id', 'action', 'data', 'changed', 'request_id', 'actor_id')
const auditOf = (app: FastifyInstance, resource: string, id: number) =>
  app.knex('audit_log').where({ resource, resource_id: id }).orderBy('id').select('action', 'before', 'after', 'request_id')

for (const { name, base } of variants) {
  t.test(`${name}: every student write leaves its audit entry and one outbox row, in its own transaction`, async t => {
    const app = await build(t)
    const created = await app.inject({ method: 'POST', url: base, payload: ada, headers: { 'x-request-id': 'create-ada' } })
    t.equal(created.statusCode, 201)
    const { id, created_at: createdAt } = created.json()

    const updated = await app.inject({ method: 'PUT', url: `${base}/${id}`, payload: { name: 'Ada King' }, headers: { 'if-match': created.headers.etag as string, 'x-request-id': 'rename-ada' } })
    t.equal(updated.statusCode, 200)
    t.not(updated.headers.etag, created.headers.etag, 'a new ETag')

    const deleted = await app.inject({ method: 'DELETE', url: `${base}/${id}`, headers: { 'if-match': updated.headers.etag as string } })
    t.equal(deleted.statusCode, 204)

    const rows = await outboxOf(app, 'student', id)
    t.same(rows.map(row => row.action), ['create', 'update', 'delete'])
    t.same(rows[0]!.data, { ...ada, id, created_at: rows[0]!.data.created_at, updated_at: rows[0]!.data.updated_at }, 'a create holds the record, without its version')
    t.ok(Date.parse(rows[0]!.data.created_at as string) === Date.parse(createdAt), 'as created')
    t.equal(rows[0]!.request_id, 'create-ada')
    t.equal(rows[0]!.actor_id, null, 'nobody: the student routes are open')
    t.same(rows[1]!.changed, ['name'], 'an update names the fields it changed')
    t.equal(rows[1]!.data.name, 'Ada King', 'and holds the record after it')
    t.equal(rows[1]!.request_id, 'rename-ada')
    t.equal(rows[2]!.data.name, 'Ada King', 'a delete holds the record before it')
    t.notOk('version' in rows[1]!.data)

    const entries = await auditOf(app, 'student', id)
    t.same(entries.map(entry => entry.action), ['create', 'update', 'delete'])
    t.same(entries[1]!.before, { name: 'Ada Lovelace' })
    t.same(entries[1]!.after, { name: 'Ada King' })

    const listed = await app.inject({ method: 'GET', url: '/api/audit?resource[eq]=student', headers: bearer((await userWithRoles(app, ['Admin'])).token) })
    t.equal(listed.statusCode, 200, listed.body)
    t.equal(listed.json().data.length, 3, 'the audit list tells of students')
  })
}

t.test('a write refused or failed leaves no audit entry, no outbox row, and the record as it was', async t => {
  const app = await build(t)
  const first = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json()
  const other = await app.inject({ method: 'POST', url: '/students', payload: { ...ada, email: 'other@example.com' } })
  const { id } = other.json()

  const stale = await app.inject({ method: 'PUT', url: `/students/${id}`, payload: { name: 'Stale' }, headers: { 'if-match': '"0"' } })
  t.equal(stale.statusCode, 412)
  t.equal(stale.headers.etag, other.headers.etag, '412 carries the current tag')
  const taken = await app.inject({ method: 'PUT', url: `/students/${id}`, payload: { email: first.email } })
  t.equal(taken.statusCode, 409)
  const missing = await app.inject({ method: 'DELETE', url: '/students/999999' })
  t.equal(missing.statusCode, 404)
  const duplicate = await app.inject({ method: 'POST', url: '/students', payload: ada })
  t.equal(duplicate.statusCode, 409)

  t.same((await outboxOf(app, 'student', id)).map(row => row.action), ['create'])
  t.same((await auditOf(app, 'student', id)).map(entry => entry.action), ['create'])
  t.equal((await app.knex('change_outbox').count({ n: '*' }))[0]!.n, '2', 'two creates, nothing else')
  t.equal((await app.inject({ method: 'GET', url: `/students/${id}` })).json().name, ada.name)
})

t.test('20 updates at once under the same If-Match: one wins, the others get 412, one entry and one row', async t => {
  const app = await build(t)
  const created = await app.inject({ method: 'POST', url: '/students', payload: ada })
  const { id } = created.json()
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    app.inject({ method: 'PUT', url: `/students/${id}`, payload: { name: `Writer ${i}` }, headers: { 'if-match': created.headers.etag as string } })))
  t.same(answers.map(res => res.statusCode).sort(), [200, ...Array.from({ length: 19 }, () => 412)])
  const rows = await outboxOf(app, 'student', id)
  t.same(rows.map(row => row.action), ['create', 'update'])
  const winner = answers.find(res => res.statusCode === 200)!.json()
  t.equal(rows[1]!.data.name, winner.name, 'the row tells of the write that won')
  t.same((await auditOf(app, 'student', id)).map(entry => entry.action), ['create', 'update'])
})

t.test('clients: create (replayed with its Idempotency-Key), update and delete each leave one outbox row, with the caller as actor', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const headers = { ...bearer(admin.token), 'idempotency-key': 'client-once' }
  const created = await app.inject({ method: 'POST', url: '/api/clients', payload: client, headers })
  const replayed = await app.inject({ method: 'POST', url: '/api/clients', payload: client, headers })
  t.equal(created.statusCode, 201)
  t.equal(replayed.headers['idempotent-replayed'], 'true')
  const { id } = created.json().data
  const updated = await app.inject({ method: 'PATCH', url: `/api/clients/${id}`, payload: { city: 'Leeds' }, headers: bearer(admin.token) })
  t.equal(updated.statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/clients/${id}`, headers: bearer(admin.token) })).statusCode, 200)

  const rows = await outboxOf(app, 'client', id)
  t.same(rows.map(row => row.action), ['create', 'update', 'delete'], 'one create for the request and its replay')
  t.same(rows.map(row => Number(row.actor_id)), [admin.id, admin.id, admin.id])
  t.same(rows[1]!.changed, ['city'])
})

t.test('CHANGE_OUTBOX=off writes no outbox row; the audit entry stays', async t => {
  const app = await build(t, config => { config.outbox.enabled = false })
  const { id } = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json()
  t.equal((await app.inject({ method: 'PATCH', url: `/students/${id}`, payload: { age: 37 } })).statusCode, 200)
  t.same(await outboxOf(app, 'student', id), [])
  t.same((await auditOf(app, 'student', id)).map(entry => entry.action), ['create', 'update'])
})

t.test('the sweep deletes the rows past CHANGE_RETENTION only', async t => {
  const app = await build(t, config => { config.outbox.retentionSeconds = 3600 })
  for (const email of ['a@example.com', 'b@example.com']) await app.inject({ method: 'POST', url: '/students', payload: { ...ada, email } })
  await app.knex('change_outbox').where('id', (await app.knex('change_outbox').min({ id: 'id' }))[0]!.id).update({ at: app.knex.raw("now() - interval '2 hours'") })
  t.equal(await app.outboxSweep(), 1)
  t.equal((await app.knex('change_outbox').count({ n: '*' }))[0]!.n, '1')
})

t.test('roles: create, update and delete each leave one outbox row; the Admin role refused leaves none', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const headers = bearer(admin.token)
  const created = await app.inject({ method: 'POST', url: '/api/roles', payload: { name: 'Clerk', permission: ['client-list'] }, headers })
  t.equal(created.statusCode, 201)
  const { id } = created.json().data
  const updated = await app.inject({ method: 'PATCH', url: `/api/roles/${id}`, payload: { permission: ['client-list', 'client-edit'] }, headers: { ...headers, 'if-match': created.headers.etag as string } })
  t.equal(updated.statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/roles/${id}`, headers })).statusCode, 200)
  const rows = await outboxOf(app, 'role', id)
  t.same(rows.map(row => row.action), ['create', 'update', 'delete'])
  t.same(rows[1]!.changed, ['permissions'])

  const adminRole = (await app.knex('roles').where({ name: 'Admin' }).first('id')).id
  const renamed = await app.inject({ method: 'PATCH', url: `/api/roles/${adminRole}`, payload: { name: 'Boss' }, headers })
  t.equal(renamed.statusCode, 409)
  t.same(await outboxOf(app, 'role', adminRole), [])
  t.same(await auditOf(app, 'role', adminRole), [])
})
