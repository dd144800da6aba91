import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../../helper.js'
import { ada, variants } from '../../routes/students/fixtures.js'
import { bearer, client, login, PASSWORD, roleWithPermissions, userWithRoles } from '../../routes/api/accounts.js'

interface OutboxRow { resource: string, resource_id: string, action: string, data: Record<string, unknown>, changed: string[] | null, request_id: string, actor_id: string | null }

const outboxOf = (app: FastifyInstance, resource: string, id: number): Promise<OutboxRow[]> =>
  app.knex('change_outbox').where({ resource, resource_id: id }).orderBy('id').select('resource', 'resource_id', 'action', 'data', 'changed', 'request_id', 'actor_id')
const auditOf = (app: FastifyInstance, resource: string, id: number) =>
  app.knex('audit_log').where({ resource, resource_id: id }).orderBy('id').select('action', 'before', 'after', 'request_id')
const outboxCount = async (app: FastifyInstance) => Number((await app.knex('change_outbox').count({ n: '*' }))[0]!.n)

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

t.test('the sweep deletes the rows past EVENTS_RETENTION only', async t => {
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

t.test('users: created by an administrator and by register, renamed, a password set, deleted, a profile changed: one outbox row each, no secret in any', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const created = await app.inject({ method: 'POST', url: '/api/users', headers: bearer(admin.token), payload: { name: 'Ola', email: 'ola@example.com', password: PASSWORD, c_password: PASSWORD } })
  t.equal(created.statusCode, 201)
  const { id } = created.json().data
  const renamed = await app.inject({ method: 'PATCH', url: `/api/users/${id}`, headers: { ...bearer(admin.token), 'if-match': created.headers.etag as string }, payload: { name: 'Ola Nowak' } })
  t.equal(renamed.statusCode, 200)
  const reset = await app.inject({ method: 'PATCH', url: `/api/users/${id}`, headers: bearer(admin.token), payload: { password: 'a new password', c_password: 'a new password' } })
  t.equal(reset.statusCode, 200)
  const { password: hash } = await app.knex('users').where({ id }).first('password')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${id}`, headers: { ...bearer(admin.token), 'if-match': reset.headers.etag as string } })).statusCode, 200)

  const rows = await outboxOf(app, 'user', id)
  t.same(rows.map(row => row.action), ['create', 'update', 'update', 'delete'])
  t.same(rows.map(row => Number(row.actor_id)), [admin.id, admin.id, admin.id, admin.id])
  t.same(rows[0]!.data, { id, name: 'Ola', email: 'ola@example.com', email_verified_at: null, pending_email: null, roles: [], created_at: rows[0]!.data.created_at, updated_at: rows[0]!.data.updated_at }, 'a create holds the user as shown')
  t.same(rows[1]!.changed, ['name'])
  t.equal(rows[1]!.data.name, 'Ola Nowak')
  t.same(rows[2]!.changed, ['password'], 'a password set is named, ')
  t.notOk('password' in rows[2]!.data, 'never kept')
  t.notMatch(JSON.stringify(rows), hash, 'no row holds the hash')
  t.notMatch(JSON.stringify(rows), /a new password|correct horse/, 'nor the password')

  const registered = await app.inject({ method: 'POST', url: '/api/register', payload: { name: 'Eve', email: 'eve@example.com', password: PASSWORD, c_password: PASSWORD } })
  t.equal(registered.statusCode, 201)
  t.notOk(registered.headers.etag, 'a register answers tokens, not the user: no ETag')
  const eve = Number(/\/api\/users\/(\d+)$/.exec(registered.headers.location as string)![1])
  const [made] = await outboxOf(app, 'user', eve)
  t.match(made, { action: 'create', data: { id: eve, name: 'Eve', email: 'eve@example.com' } })
  t.equal(Number(made!.actor_id), eve, 'who registers acts as themselves')
  t.notOk('password' in made!.data)
  t.equal((await outboxOf(app, 'user', eve)).length, 1)

  const profile = await app.inject({ method: 'PATCH', url: '/api/profile', headers: bearer(registered.json().data), payload: { name: 'Eve Adams' } })
  t.equal(profile.statusCode, 200)
  const [, changed] = await outboxOf(app, 'user', eve)
  t.match(changed, { action: 'update', changed: ['name'], data: { name: 'Eve Adams' } }, 'a profile change is a change of the user')
  t.equal(Number(changed!.actor_id), eve)
})

t.test('API keys and sessions are audited as before, and write no outbox row; a key\'s create is never replayed', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, [])
  const headers = { ...bearer(user.token), 'idempotency-key': 'one key' }
  const made = await app.inject({ method: 'POST', url: '/api/keys', headers, payload: { name: 'export', permissions: [], current_password: PASSWORD } })
  t.equal(made.statusCode, 201)
  t.notOk(made.headers.etag, 'no read tags a key')
  const again = await app.inject({ method: 'POST', url: '/api/keys', headers, payload: { name: 'export', permissions: [], current_password: PASSWORD } })
  t.equal(again.statusCode, 201)
  t.notOk(again.headers['idempotent-replayed'], 'a second key: a secret is never kept to be answered again')
  t.not(again.json().secret, made.json().secret)
  t.equal(await app.knex('idempotency_keys').where('key', 'one key').first(), undefined, 'nor its key')
  const key = made.json().data
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${key.id}`, headers: bearer(user.token) })).statusCode, 200)

  const other = await login(app, user.email)
  const sessions = (await app.inject({ url: '/api/sessions', headers: bearer(other) })).json().data as { id: number, current: boolean }[]
  const first = sessions.find(session => !session.current)!
  t.equal((await app.inject({ method: 'DELETE', url: `/api/sessions/${first.id}`, headers: bearer(other) })).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/sessions/${first.id}`, headers: bearer(other) })).statusCode, 404, 'ended already')
  // The only change clients follow here.
  t.equal((await app.inject({ method: 'PATCH', url: '/api/profile', headers: bearer(other), payload: { name: 'Renamed' } })).statusCode, 200)

  const { created_at: _, ...shown } = key
  t.same((await auditOf(app, 'key', key.id)).map(entry => [entry.action, entry.before, entry.after]), [
    ['create', null, shown],
    ['revoke', shown, null]
  ])
  t.same((await auditOf(app, 'session', first.id)).map(entry => [entry.action, entry.before, entry.after]), [
    ['login', null, { user_id: user.id, ip: '127.0.0.1', user_agent: 'lightMyRequest' }],
    ['end', null, { user_id: user.id, end_reason: 'ended by its user' }]
  ])
  t.same(await app.knex('change_outbox').whereIn('resource', ['key', 'session']).select('id'), [], 'no row of a key or a session')
  t.same((await app.knex('change_outbox').select('resource', 'action')), [{ resource: 'user', action: 'update' }], 'the profile change\'s row only')
})

t.test('a user write refused (403: more than the caller holds; 409: the last Admin) leaves no audit entry and no outbox row', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await roleWithPermissions(app, 'Editor', ['user-list', 'user-create', 'user-edit', 'user-delete'])
  const editor = await userWithRoles(app, ['Editor'])
  const entries = async () => Number((await app.knex('audit_log').whereNot('resource', 'session').count({ n: '*' }))[0]!.n)
  const refused: [string, 'POST' | 'PATCH' | 'DELETE', string, string, object | undefined, number][] = [
    ['grant Admin', 'POST', '/api/users', editor.token, { name: 'Mallory', email: 'mallory@example.com', password: PASSWORD, c_password: PASSWORD, roles: ['Admin'] }, 403],
    ['edit an Admin', 'PATCH', `/api/users/${admin.id}`, editor.token, { name: 'Demoted' }, 403],
    ['delete an Admin', 'DELETE', `/api/users/${admin.id}`, editor.token, undefined, 403],
    ['the last Admin drops the role', 'PATCH', `/api/users/${admin.id}`, admin.token, { roles: [] }, 409],
    ['the last Admin deleted', 'DELETE', `/api/users/${admin.id}`, admin.token, undefined, 409]
  ]
  for (const [what, method, url, token, payload, status] of refused) {
    const res = await app.inject({ method, url, headers: bearer(token), ...(payload && { payload }) })
    t.equal(res.statusCode, status, what)
  }
  t.equal(await entries(), 0, 'no audit entry')
  t.equal(await outboxCount(app), 0, 'no outbox row')
  t.equal(await app.knex('users').where('email', 'mallory@example.com').first(), undefined, 'no user made')
  const shown = (await app.inject({ url: `/api/users/${admin.id}`, headers: bearer(admin.token) })).json().data
  t.match(shown, { name: 'Test User', roles: [{ name: 'Admin' }] }, 'the Admin as they were')

  // What the editor may do leaves its row.
  t.equal((await app.inject({ method: 'PATCH', url: `/api/users/${editor.id}`, headers: bearer(editor.token), payload: { name: 'Ed' } })).statusCode, 200)
  t.same((await outboxOf(app, 'user', editor.id)).map(row => row.action), ['update'])
  t.equal(await entries(), 1)
})

t.test('AUDIT_LOG=off and CHANGE_OUTBOX=off: a create is its INSERT alone, and writes neither', async t => {
  const app = await build(t, config => { config.outbox.enabled = false; config.audit.enabled = false })
  const created = await app.inject({ method: 'POST', url: '/students', payload: ada })
  t.equal(created.statusCode, 201)
  t.ok(created.headers.etag)
  const { id } = created.json()
  t.same(await outboxOf(app, 'student', id), [])
  t.same(await auditOf(app, 'student', id), [])
})

t.test('a session id past any integer is not found (404), not a database error', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const res = await app.inject({ method: 'DELETE', url: '/api/sessions/99999999999999999999', headers: bearer(admin.token) })
  t.equal(res.statusCode, 404)
  t.equal(res.json().code, 'not_found')
})
