import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, lockWaiters } from '../../helper.js'
import { bearer, client, insertClient, login, PASSWORD, roleWithPermissions, userWithRoles } from './accounts.js'
import { SESSIONS_PER_USER } from '../../../routes/api/(authenticated)/sessions/repository.js'

interface Entry {
  id: number
  at: string
  actor_id: number | null
  key_id: number | null
  session_id: number | null
  ip: string | null
  request_id: string | null
  action: string
  resource: string
  resource_id: number | null
  before: Record<string, unknown> | null
  after: Record<string, unknown> | null
}

/** The audit log as GET /api/audit shows it to `token`: filtered (`&name[op]=value…`), in id order unless told otherwise. */
async function auditLog (app: FastifyInstance, token: string, filters = '', order = 'sort=id&limit=1000'): Promise<Entry[]> {
  const res = await app.inject({ url: `/api/audit?${order}${filters}`, headers: bearer(token) })
  if (res.statusCode !== 200) throw new Error(`could not read the audit log: ${res.statusCode} ${res.body}`)
  return res.json().data
}

const count = async (app: FastifyInstance) => Number((await app.knex('audit_log').count({ n: '*' }).first())!.n)
const request = (app: FastifyInstance, token: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object, headers: Record<string, string> = {}) =>
  app.inject({ method, url, headers: { ...bearer(token), ...headers }, ...(payload ? { payload } : {}) })

t.test('a scripted scenario reads back exactly: create a user, grant a role, change a password, revoke a key', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const [{ id: userRole }] = await app.knex('roles').where('name', 'User').select('id')

  const created = await request(app, admin.token, 'POST', '/api/users', { name: 'Ola', email: 'ola@example.com', password: PASSWORD, c_password: PASSWORD })
  t.equal(created.statusCode, 201)
  const ola = created.json().data.id
  t.equal((await request(app, admin.token, 'PATCH', `/api/users/${ola}`, { roles: ['User'] })).statusCode, 200)
  t.equal((await request(app, admin.token, 'PATCH', `/api/users/${ola}`, { password: 'a new password', c_password: 'a new password' })).statusCode, 200)
  const olaToken = await login(app, 'ola@example.com', 'a new password')
  const key = await request(app, olaToken, 'POST', '/api/keys', { name: 'export', permissions: ['client-list'], current_password: 'a new password' })
  t.equal(key.statusCode, 201)
  const keyId = key.json().data.id
  t.equal((await request(app, admin.token, 'DELETE', `/api/keys/${keyId}`)).statusCode, 200)

  const entries = await auditLog(app, admin.token)
  const told = entries.map(({ actor_id: actor, action, resource, resource_id: id, before, after }) => ({ actor, action, resource, id, before, after }))
  const olaSession = entries.find(entry => entry.action === 'login' && entry.actor_id === ola)!.session_id
  t.same(told, [
    { actor: admin.id, action: 'login', resource: 'session', id: entries[0]!.session_id, before: null, after: { user_id: admin.id, ip: '127.0.0.1', user_agent: 'lightMyRequest' } },
    { actor: admin.id, action: 'create', resource: 'user', id: ola, before: null, after: { id: ola, name: 'Ola', email: 'ola@example.com', email_verified_at: null, pending_email: null, roles: [] } },
    { actor: admin.id, action: 'update', resource: 'user', id: ola, before: { roles: [] }, after: { roles: [{ id: userRole, name: 'User' }] } },
    { actor: admin.id, action: 'update', resource: 'user', id: ola, before: { password: '[redacted]' }, after: { password: '[redacted]' } },
    { actor: ola, action: 'login', resource: 'session', id: olaSession, before: null, after: { user_id: ola, ip: '127.0.0.1', user_agent: 'lightMyRequest' } },
    { actor: ola, action: 'create', resource: 'key', id: keyId, before: null, after: { id: keyId, user_id: ola, name: 'export', prefix: key.json().data.prefix, permissions: ['client-list'], expires_at: null, last_used_at: null, rate_limit: null, rate_quota: null } },
    { actor: admin.id, action: 'revoke', resource: 'key', id: keyId, before: { id: keyId, user_id: ola, name: 'export', prefix: key.json().data.prefix, permissions: ['client-list'], expires_at: null, last_used_at: null, rate_limit: null, rate_quota: null }, after: null }
  ])
  t.notMatch(JSON.stringify(entries), /argon2|a new password|correct horse/, 'no password nor hash, nor any part of the key\'s secret past its prefix')
  t.notMatch(JSON.stringify(entries), key.json().secret.slice(11))

  const [first] = entries
  t.match(first, { ip: '127.0.0.1', request_id: String, key_id: null })
  t.ok(first!.session_id! > 0, 'a login\'s entry names the session it started')
  t.same(entries.slice(1, 4).map(entry => entry.session_id), [first!.session_id, first!.session_id, first!.session_id], 'who acted, in which session')
})

t.test('each successful change leaves exactly one entry; a repeat of a keyed create leaves none', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const clientId = await insertClient(app)
  const role = await roleWithPermissions(app, 'Reader', ['client-list'])
  const other = await userWithRoles(app, [])
  const changes: [string, 'POST' | 'PUT' | 'PATCH' | 'DELETE', string, object?][] = [
    ['client create', 'POST', '/api/clients', client],
    ['client replace', 'PUT', `/api/clients/${clientId}`, { ...client, city: 'Kraków' }],
    ['client change, to the same value', 'PATCH', `/api/clients/${clientId}`, { city: 'Kraków' }],
    ['client delete', 'DELETE', `/api/clients/${clientId}`],
    ['role create', 'POST', '/api/roles', { name: 'Writer', permission: ['client-create'] }],
    ['role change', 'PATCH', `/api/roles/${role.id}`, { permission: ['client-list', 'client-edit'] }],
    ['role delete', 'DELETE', `/api/roles/${role.id}`],
    ['user create', 'POST', '/api/users', { name: 'Eve', email: 'eve@example.com', password: PASSWORD, c_password: PASSWORD }],
    ['user change', 'PUT', `/api/users/${other.id}`, { name: 'Renamed', email: 'renamed@example.com', roles: ['User'] }],
    ['user delete', 'DELETE', `/api/users/${other.id}`],
    ['profile change', 'PATCH', '/api/profile', { name: 'Admin Renamed' }]
  ]
  for (const [what, method, url, payload] of changes) {
    const before = await count(app)
    const res = await request(app, admin.token, method, url, payload)
    t.ok(res.statusCode < 300, `${what}: ${res.statusCode}`)
    t.equal(await count(app) - before, 1, `${what}: one entry`)
  }

  const keyed = { 'idempotency-key': 'one client, once' }
  const before = await count(app)
  const first = await request(app, admin.token, 'POST', '/api/clients', client, keyed)
  const repeat = await request(app, admin.token, 'POST', '/api/clients', client, keyed)
  t.equal(first.statusCode, 201)
  t.equal(repeat.headers['idempotent-replayed'], 'true')
  t.equal(await count(app) - before, 1, 'the repeat is not a change')
  const [entry] = await auditLog(app, admin.token, '&resource[eq]=client&action[eq]=create', 'sort=-id&limit=1')
  t.same(entry!.after, { id: first.json().data.id, ...client }, 'a create written in its INSERT\'s statement shows the record')

  const change = (await auditLog(app, admin.token, `&resource[eq]=client&resource_id[eq]=${clientId}`)).map(e => [e.action, e.before, e.after])
  t.same(change, [
    ['update', { city: 'Warszawa' }, { city: 'Kraków' }],
    ['update', {}, {}],
    ['delete', { id: clientId, ...client, city: 'Kraków' }, null]
  ], 'an update shows what changed; one that changed nothing, nothing')
})

t.test('a change whose audit entry cannot be written does not happen; a refused one leaves no entry', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const clientId = await insertClient(app)
  await app.knex.raw(`create function refuse_client_entries() returns trigger language plpgsql as $$
    begin if new.resource = 'client' then raise exception 'no entry'; end if; return new; end $$`)
  await app.knex.raw('create trigger refuse_client_entries before insert on audit_log for each row execute function refuse_client_entries()')
  const clients = Number((await app.knex('clients').count({ n: '*' }).first())!.n)

  t.equal((await request(app, admin.token, 'POST', '/api/clients', client)).statusCode, 500)
  t.equal((await request(app, admin.token, 'POST', '/api/clients', client, { 'idempotency-key': 'k1' })).statusCode, 500)
  t.equal((await request(app, admin.token, 'PATCH', `/api/clients/${clientId}`, { city: 'Gdańsk' })).statusCode, 500)
  t.equal((await request(app, admin.token, 'DELETE', `/api/clients/${clientId}`)).statusCode, 500)
  t.equal((await request(app, admin.token, 'PATCH', '/api/clients/4294967296', { city: 'Gdańsk' })).statusCode, 404, 'an id past PostgreSQL\'s integers names no client')
  t.equal(Number((await app.knex('clients').whereNull('deleted_at').count({ n: '*' }).first())!.n), clients, 'no client made or deleted')
  t.equal((await app.knex('clients').where('id', clientId).first('city')).city, 'Warszawa', 'nor changed')
  t.equal(await app.knex('idempotency_keys').where('key', 'k1').first(), undefined, 'nor a key kept')

  const entries = await count(app)
  const demote = await request(app, admin.token, 'PUT', `/api/users/${admin.id}`, { name: 'x', email: 'x@example.com', roles: [], current_password: PASSWORD })
  t.equal(demote.statusCode, 409, 'the last Admin cannot lose the role: the transaction rolls back')
  t.equal(await count(app), entries, 'and leaves no entry')
})

t.test('session events: login, failed login, logout, a session ended, a refresh token spent again', async t => {
  const app = await build(t, config => { config.auth.refreshReuseGraceSeconds = 1 })
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, [])
  const { id: mark } = (await app.knex('audit_log').max({ id: 'id' }).first())!

  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: user.email, password: 'wrong password' } })).statusCode, 401)
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'nobody@example.com', password: 'wrong password' } })).statusCode, 401)
  const second = await app.inject({ method: 'POST', url: '/api/login', payload: { email: user.email, password: PASSWORD } })
  const { refresh_token: refreshToken } = second.json()
  t.equal((await app.inject({ method: 'POST', url: '/api/token/refresh', payload: { refresh_token: refreshToken } })).statusCode, 200)
  await new Promise(resolve => setTimeout(resolve, 2100))
  t.equal((await app.inject({ method: 'POST', url: '/api/token/refresh', payload: { refresh_token: refreshToken } })).statusCode, 401)
  const sessions = (await request(app, user.token, 'GET', '/api/sessions')).json().data as { id: number, current: boolean }[]
  const current = sessions.find(s => s.current)!
  const third = await login(app, user.email)
  t.equal((await request(app, third, 'DELETE', `/api/sessions/${current.id}`)).statusCode, 200)
  t.equal((await request(app, third, 'GET', '/api/logout')).statusCode, 200)

  const told = (await auditLog(app, admin.token, `&resource[eq]=session&id[gt]=${mark}`))
    .map(({ actor_id: actor, action, resource_id: id, after }) => ({ actor, action, id, after }))
  const secondSession = told[2]!.id
  t.match(told, [
    { actor: null, action: 'login-failed', id: null, after: { email: user.email, user_id: user.id } },
    { actor: null, action: 'login-failed', id: null, after: { email: 'nobody@example.com', user_id: null } },
    { actor: user.id, action: 'login', after: { user_id: user.id } },
    { actor: null, action: 'refresh-reuse', id: secondSession, after: { user_id: user.id, end_reason: 'refresh token reused' } },
    { actor: user.id, action: 'login' },
    { actor: user.id, action: 'end', id: current.id, after: { user_id: user.id, end_reason: 'ended by its user' } },
    { actor: user.id, action: 'logout', after: { user_id: user.id, scope: 'this session' } }
  ])
  t.equal(told.length, 7)
})

t.test('a login past the cap of live sessions writes an entry for each session it ended', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, [])
  // With the session userWithRoles started, the user is at the cap.
  await app.knex('sessions').insert(Array.from({ length: SESSIONS_PER_USER - 1 }, () => ({ user_id: user.id, expires_at: app.knex.raw('now() + interval \'1 day\'') })))
  const oldest = await app.knex('sessions').where('user_id', user.id).orderBy('id').first('id')
  const { id: mark } = (await app.knex('audit_log').max({ id: 'id' }).first())!
  await login(app, user.email)
  const told = (await auditLog(app, admin.token, `&resource[eq]=session&id[gt]=${mark}`))
    .map(({ actor_id: actor, action, resource_id: id, after }) => ({ actor, action, id, after }))
  t.match(told, [
    { actor: user.id, action: 'login', after: { user_id: user.id } },
    { actor: user.id, action: 'end', id: Number(oldest.id), after: { user_id: user.id, end_reason: 'superseded' } }
  ])
  t.equal(told.length, 2)
})

t.test('two logouts of one session at once: both answered, one entry', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, [])
  const token = await login(app, user.email)
  const session = await app.knex('sessions').where('user_id', user.id).whereNull('ended_at').orderBy('id', 'desc').first('id')
  // Both pass the token check, then wait on the session's row until this lock goes.
  const holder = await app.knex.transaction()
  t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
  await holder('sessions').where('id', session.id).forUpdate()
  const logouts = [request(app, token, 'GET', '/api/logout'), request(app, token, 'GET', '/api/logout')]
  t.ok(await lockWaiters(app, 2), 'both wait on the session')
  await holder.commit()
  t.same((await Promise.all(logouts)).map(res => res.statusCode), [200, 200])
  t.equal((await auditLog(app, admin.token, `&action[eq]=logout&actor_id[eq]=${user.id}`)).length, 1)
})

t.test('a profile change waiting on another change of the user tells what it changed from', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, [])
  const other = await app.knex.transaction()
  t.teardown(() => other.isCompleted() ? undefined : other.rollback())
  await other('users').where('id', user.id).update({ name: 'Changed meanwhile' })
  // A role given meanwhile is not this change's either.
  await other('user_roles').insert({ user_id: user.id, role_id: other('roles').where({ name: 'User' }).select('id') })
  const change = request(app, user.token, 'PATCH', '/api/profile', { name: 'Mine' })
  t.ok(await lockWaiters(app, 1), 'the change waits on the other')
  await other.commit()
  t.equal((await change).statusCode, 200)
  const [entry] = await auditLog(app, admin.token, `&action[eq]=update&resource_id[eq]=${user.id}`)
  t.same([entry!.before, entry!.after], [{ name: 'Changed meanwhile' }, { name: 'Mine' }])
})

t.test('a failed login with a lone surrogate in its address is 401, its entry kept with U+FFFD', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const res = await app.inject({ method: 'POST', url: '/api/login', headers: { 'content-type': 'application/json' }, payload: '{"email":"a\\ud800@example.com","password":"wrong password"}' })
  t.equal(res.statusCode, 401)
  const [entry] = await auditLog(app, admin.token, '&action[eq]=login-failed')
  t.same(entry!.after, { email: 'a\ufffd@example.com', user_id: null })
})

t.test('GET /api/audit: audit-list only, newest first, filtered, paged by cursor, counted', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const reader = await userWithRoles(app, ['User'])
  for (let i = 0; i < 3; i++) t.equal((await request(app, admin.token, 'POST', '/api/clients', client)).statusCode, 201)

  const refused = await request(app, reader.token, 'GET', '/api/audit')
  t.equal(refused.statusCode, 403)
  t.match(refused.json(), { success: false, message: /audit-list/ })

  const page = await request(app, admin.token, 'GET', '/api/audit?resource[eq]=client&limit=2&count=exact')
  t.equal(page.statusCode, 200)
  t.equal(page.headers['x-total-count'], '3')
  const ids = page.json().data.map((e: Entry) => e.id)
  t.ok(ids[0] > ids[1], 'newest first')
  const next = /<([^>]+)>; rel="next"/.exec(page.headers.link as string)![1]!
  t.match(next, /sort=-id/)
  const rest = await request(app, admin.token, 'GET', next)
  t.equal(rest.json().data.length, 1)
  t.ok(rest.json().data[0].id < ids[1])

  t.equal((await auditLog(app, admin.token, `&actor_id[eq]=${reader.id}`)).length, 1, 'the reader\'s login')
  t.equal((await auditLog(app, admin.token, '&action[in]=create,login')).length, 5)
  t.equal((await auditLog(app, admin.token, '&at[gt]=2999-01-01T00:00:00Z')).length, 0)
  t.equal((await request(app, admin.token, 'GET', '/api/audit?action[contains]=x')).statusCode, 400, 'no text search on actions')
  t.equal((await request(app, admin.token, 'GET', '/api/audit?at[gt]=yesterday')).statusCode, 400)
  const write = await request(app, admin.token, 'POST', '/api/audit', {})
  t.equal(write.statusCode, 405, 'nothing writes it')
  t.equal(write.headers.allow, 'GET, HEAD')
})

t.test('a reader following next in id order misses no entry of a transaction that committed after a later one', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  /** Every entry's id, following `next` from the first page of two in id order. */
  async function readAll (): Promise<number[]> {
    const seen: number[] = []
    for (let url: string | undefined = '/api/audit?sort=id&limit=2'; url !== undefined;) {
      const res = await request(app, admin.token, 'GET', url)
      t.equal(res.statusCode, 200)
      seen.push(...res.json().data.map((entry: Entry) => entry.id))
      url = /<([^>]+)>; rel="next"/.exec(res.headers.link as string ?? '')?.[1]
    }
    return seen
  }

  // A transaction that writes its entry first and commits last: its id is the lower.
  const slow = await app.knex.transaction()
  const early = Number((await slow('audit_log').insert({ action: 'create', resource: 'student', resource_id: null }).returning('id'))[0].id)
  const created = await request(app, admin.token, 'POST', '/api/clients', client)
  t.equal(created.statusCode, 201, 'a later change commits first')
  const reading = readAll()
  setTimeout(() => { void slow.commit() }, 200)
  const seen = await reading

  const late = Number((await app.knex('audit_log').where({ resource: 'client', resource_id: created.json().data.id }).first('id')).id)
  t.ok(early < late, 'the entry committed last has the lower id')
  t.ok(seen.includes(early), 'the reader saw the entry of the transaction that committed last')
  t.ok(seen.includes(late))
  t.same(seen, [...new Set(seen)].sort((a, b) => a - b), 'in id order, none twice')

  // A transaction rolled back holds a reader back only while it is in flight.
  const rolledBack = await app.knex.transaction()
  const never = Number((await rolledBack('audit_log').insert({ action: 'create', resource: 'student', resource_id: null }).returning('id'))[0].id)
  const again = readAll()
  setTimeout(() => { void rolledBack.rollback().catch(() => undefined) }, 100)
  const after = await again
  t.same(after, seen, 'the same entries, and not the one rolled back')
  t.notOk(after.includes(never))
})

t.test('a key\'s changes name the key; the log is append-only but for the retention sweep', async t => {
  const app = await build(t, config => { config.audit.retentionSeconds = 86_400 })
  const admin = await userWithRoles(app, ['Admin'])
  const { secret, data: key } = (await request(app, admin.token, 'POST', '/api/keys', { name: 'writer', permissions: ['client-create', 'audit-list'], current_password: PASSWORD })).json()
  t.equal((await request(app, secret, 'POST', '/api/clients', client)).statusCode, 201)
  const [made] = await auditLog(app, secret, '&resource[eq]=client')
  t.match(made, { actor_id: admin.id, key_id: key.id, session_id: null, action: 'create' })

  await t.rejects(app.knex('audit_log').update({ action: 'delete' }), /append-only/)
  await t.rejects(app.knex('audit_log').where('id', made!.id).delete(), /append-only/)
  await t.rejects(app.knex.raw('truncate audit_log'), /append-only/)

  await app.knex('audit_log').insert({ at: app.knex.raw("now() - interval '2 days'"), action: 'login', resource: 'session' })
  const entries = await count(app)
  t.equal(await app.auditSweep(), 1, 'the entry older than AUDIT_RETENTION goes')
  t.equal(await count(app), entries - 1)
  t.equal(await app.auditSweep(), 0, 'and nothing younger')
  await t.rejects(app.knex('audit_log').where('id', made!.id).delete(), /append-only/, 'the sweep\'s leave ended with its statement')
})

t.test('AUDIT_LOG=off writes no entries', async t => {
  const app = await build(t, config => { config.audit.enabled = false })
  const admin = await userWithRoles(app, ['Admin'])
  t.equal((await request(app, admin.token, 'POST', '/api/clients', client)).statusCode, 201)
  t.equal((await request(app, admin.token, 'POST', '/api/roles', { name: 'Writer', permission: ['client-create'] })).statusCode, 201)
  t.equal(await count(app), 0)
})
