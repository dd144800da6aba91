import { createHash } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, lockWaiters, within } from '../../helper.js'
import { bearer, client, login, PASSWORD, roleWithPermissions, userWithRoles } from './accounts.js'

interface Made { success: true, data: { id: number, user_id: number, name: string, prefix: string, permissions: string[], expires_at: string | null, last_used_at: string | null }, secret: string, message: string }

async function makeKey (app: FastifyInstance, token: string, body: Record<string, unknown>): Promise<Made> {
  const res = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload: { current_password: PASSWORD, ...body } })
  if (res.statusCode !== 201) throw new Error(`could not make a key: ${res.statusCode} ${res.body}`)
  return res.json()
}

const status = async (app: FastifyInstance, key: string, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  (await app.inject({ method, url, headers: bearer(key), ...(payload ? { payload } : {}) })).statusCode

t.test('a key is made with its secret shown once, kept only as its digest, and listed without it', async t => {
  const app = await build(t)
  const owner = await userWithRoles(app, ['Admin'])
  const made = await makeKey(app, owner.token, { name: 'nightly export', permissions: ['client-list'] })
  t.match(made, { success: true, secret: /^sk_[A-Za-z0-9_-]{43}$/, data: { user_id: owner.id, name: 'nightly export', permissions: ['client-list'], expires_at: null, last_used_at: null } })
  t.equal(made.data.prefix, made.secret.slice(0, 11))

  const [row] = await app.knex('api_keys').where('id', made.data.id).select('hash')
  t.equal(row.hash.toString('hex'), createHash('sha256').update(made.secret).digest('hex'), 'the database keeps its SHA-256')

  const list = await app.inject({ url: '/api/keys', headers: bearer(owner.token) })
  t.equal(list.statusCode, 200)
  t.same(list.json().data.map((key: { id: number }) => key.id), [made.data.id])
  t.notMatch(list.body, made.secret.slice(11), 'no part of the secret past its prefix')
})

t.test('a key may do what its own permissions allow, and nothing else its owner may', async t => {
  const app = await build(t)
  const owner = await userWithRoles(app, ['Admin'])
  const { secret } = await makeKey(app, owner.token, { name: 'reader', permissions: ['client-list'] })
  t.equal(await status(app, secret, 'GET', '/api/clients'), 200, 'listing clients')
  t.equal(await status(app, secret, 'POST', '/api/clients', client), 403, 'creating one: the owner may, the key may not')
  t.equal(await status(app, secret, 'GET', '/api/users'), 403)
  t.equal(await status(app, secret, 'GET', '/api/profile'), 200, 'the profile of its owner needs no permission')

  // Written beside the request, which does not wait for it.
  const lastUse = async () => Boolean((await app.knex('api_keys').where('prefix', secret.slice(0, 11)).first('last_used_at')).last_used_at)
  t.ok(await within(5_000, lastUse), 'its last use is written')
})

t.test('a key holds only permissions its maker holds, and a future expiry', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, ['User'])
  const make = (body: object) => app.inject({ method: 'POST', url: '/api/keys', headers: bearer(user.token), payload: { current_password: PASSWORD, ...body } })

  const beyond = await make({ name: 'too much', permissions: ['client-list', 'user-delete'] })
  t.equal(beyond.statusCode, 403)
  t.match(beyond.json(), { success: false, message: /user-delete/ })
  t.equal((await make({ name: 'unknown', permissions: ['everything'] })).statusCode, 403, 'a permission nobody holds')
  const past = await make({ name: 'past', permissions: [], expires_at: '2020-01-01T00:00:00Z' })
  t.equal(past.statusCode, 400)
  t.match(past.json(), { success: false, data: { expires_at: ['must be in the future'] } })
  t.equal((await make({ name: '', permissions: [] })).statusCode, 400, 'a name is required')
  t.equal((await make({ name: 'twice', permissions: ['client-list', 'client-list'] })).statusCode, 400, 'each permission once')
  t.equal(await app.knex('api_keys').count({ n: '*' }).first().then(row => Number(row!.n)), 0, 'nothing was made')
})

t.test('a key is refused from the next request on once revoked, expired, its owner deleted, or the owner loses the permission', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await roleWithPermissions(app, 'Readers', ['client-list'])
  const owner = await userWithRoles(app, ['Readers'])
  const key = async () => (await makeKey(app, owner.token, { name: 'k', permissions: ['client-list'] })).secret

  const revoked = await key()
  t.equal(await status(app, revoked, 'GET', '/api/clients'), 200)
  const [listed] = (await app.inject({ url: '/api/keys', headers: bearer(owner.token) })).json().data
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${listed.id}`, headers: bearer(owner.token) })).statusCode, 200)
  t.equal(await status(app, revoked, 'GET', '/api/clients'), 401, 'revoked')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${listed.id}`, headers: bearer(owner.token) })).statusCode, 404, 'revoked already')

  const losing = await key()
  t.equal(await status(app, losing, 'GET', '/api/clients'), 200)
  const readers = await app.knex('roles').where('name', 'Readers').first('id')
  t.equal((await app.inject({ method: 'PATCH', url: `/api/roles/${readers.id}`, headers: bearer(admin.token), payload: { permission: [] } })).statusCode, 200)
  t.equal(await status(app, losing, 'GET', '/api/clients'), 403, 'the owner lost client-list: so did the key')

  const expiring = (await makeKey(app, admin.token, { name: 'brief', permissions: ['client-list'], expires_at: new Date(Date.now() + 1500).toISOString() })).secret
  t.equal(await status(app, expiring, 'GET', '/api/clients'), 200, 'before its expiry (and now cached)')
  await new Promise(resolve => setTimeout(resolve, 1600))
  t.equal(await status(app, expiring, 'GET', '/api/clients'), 401, 'after it')

  const orphan = (await makeKey(app, admin.token, { name: 'k', permissions: ['client-list'] })).secret
  const other = await userWithRoles(app, ['Admin'])
  t.equal(await status(app, orphan, 'GET', '/api/clients'), 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${admin.id}`, headers: bearer(other.token) })).statusCode, 200)
  t.equal(await status(app, orphan, 'GET', '/api/clients'), 401, 'its owner deleted')
})

t.test('a key makes no keys and manages no sessions nor the profile; a malformed key is 401', async t => {
  const app = await build(t)
  const owner = await userWithRoles(app, ['Admin'])
  const made = await makeKey(app, owner.token, { name: 'k', permissions: ['user-edit', 'user-list'] })
  for (const [method, url, payload] of [
    ['POST', '/api/keys', { name: 'chained', permissions: [], current_password: PASSWORD }],
    ['GET', '/api/keys', undefined],
    ['DELETE', `/api/keys/${made.data.id}`, undefined],
    ['GET', '/api/sessions', undefined],
    ['GET', '/api/logout', undefined],
    ['PATCH', '/api/profile', { name: 'Taken Over' }]
  ] as const) {
    const res = await app.inject({ method, url, headers: bearer(made.secret), ...(payload ? { payload } : {}) })
    t.equal(res.statusCode, 403, `${method} ${url}`)
    t.match(res.json(), { success: false, message: /API key cannot/ })
  }
  t.equal(await status(app, made.secret, 'GET', '/api/users'), 200, 'the key itself still works')
  const malformed = await app.inject({ url: '/api/clients', headers: bearer(`${made.secret}x`) })
  t.equal(malformed.statusCode, 401)
  t.equal(await status(app, `sk_${'A'.repeat(43)}`, 'GET', '/api/profile'), 401, 'a key that was never made')
})

t.test('another user\'s keys: listed and revoked with user-edit over them, hidden without it', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  // Every permission of the User role, and user-edit.
  await roleWithPermissions(app, 'Editors', ['user-edit', 'client-list', 'client-create', 'client-edit', 'client-delete'])
  const editor = await userWithRoles(app, ['Editors'])
  const user = await userWithRoles(app, ['User'])
  const userKey = await makeKey(app, user.token, { name: 'u', permissions: [] })
  const adminKey = await makeKey(app, admin.token, { name: 'a', permissions: [] })

  t.equal((await app.inject({ url: `/api/keys?user_id=${editor.id}`, headers: bearer(user.token) })).statusCode, 403, 'without user-edit')
  t.equal((await app.inject({ url: '/api/keys?user_id=99999999999', headers: bearer(editor.token) })).statusCode, 400, 'an id no user can have')
  t.same((await app.inject({ url: '/api/keys?user_id=123456', headers: bearer(editor.token) })).json().data, [], 'a user who does not exist has no keys')
  t.equal((await app.inject({ url: '/api/keys?_=123', headers: bearer(editor.token) })).statusCode, 200, 'an unknown parameter (a cache-buster) is ignored, as on every route')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${adminKey.data.id}`, headers: bearer(user.token) })).statusCode, 404, 'someone else\'s key, without user-edit')
  const listed = await app.inject({ url: `/api/keys?user_id=${user.id}`, headers: bearer(editor.token) })
  t.equal(listed.statusCode, 200)
  t.same(listed.json().data.map((key: { id: number }) => key.id), [userKey.data.id])
  t.equal((await app.inject({ url: `/api/keys?user_id=${admin.id}`, headers: bearer(editor.token) })).statusCode, 403, 'the admin holds more than the editor')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${adminKey.data.id}`, headers: bearer(editor.token) })).statusCode, 403)
  t.equal(await status(app, adminKey.secret, 'GET', '/api/profile'), 200, 'the admin\'s key still works')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${userKey.data.id}`, headers: bearer(editor.token) })).statusCode, 200)
  t.equal(await status(app, userKey.secret, 'GET', '/api/profile'), 401, 'revoked by the editor')
})

t.test('a key id past any key is 404; a key whose last use cannot be written still answers', async t => {
  const app = await build(t)
  const owner = await userWithRoles(app, ['User'])
  for (const id of ['99999999999999999999', '123456']) {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${id}`, headers: bearer(owner.token) })).statusCode, 404, id)
  }
  const { secret } = await makeKey(app, owner.token, { name: 'k', permissions: ['client-list'] })
  // The write of its last use fails (as with a database that refuses it); the request does not.
  await app.knex.raw('alter table api_keys add constraint never_used check (last_used_at is null)')
  t.equal(await status(app, secret, 'GET', '/api/clients'), 200)
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(await status(app, secret, 'GET', '/api/clients'), 200, 'the failure was only logged')
  t.equal((await app.knex('api_keys').first('last_used_at')).last_used_at, null)
})

t.test('a key acts for its owner, never on them: no change, role or deletion of its owner through /api/users', async t => {
  const app = await build(t)
  // The key holds every permission of its owner: the rule that nobody acts on a user who holds
  // more does not stop it.
  await roleWithPermissions(app, 'User admins', ['user-list', 'user-edit', 'user-delete'])
  const owner = await userWithRoles(app, ['User admins'])
  const other = await userWithRoles(app, [])
  const { secret } = await makeKey(app, owner.token, { name: 'admin tool', permissions: ['user-list', 'user-edit', 'user-delete'] })
  const before = (await app.inject({ url: `/api/users/${owner.id}`, headers: bearer(owner.token) })).json().data
  for (const [method, payload] of [
    ['PATCH', { name: 'Taken Over' }],
    ['PATCH', { email: 'thief@example.com' }],
    ['PATCH', { password: 'the thief\'s password', c_password: 'the thief\'s password' }],
    ['PATCH', { roles: [] }],
    ['PUT', { name: 'Taken Over', email: 'thief@example.com', password: 'the thief\'s password', c_password: 'the thief\'s password', roles: ['User admins'] }],
    ['DELETE', undefined]
  ] as const) {
    const res = await app.inject({ method, url: `/api/users/${owner.id}`, headers: bearer(secret), ...(payload ? { payload } : {}) })
    t.equal(res.statusCode, 403, `${method} ${JSON.stringify(payload)}`)
    t.match(res.json(), { success: false, statusCode: 403, error: 'Forbidden', message: /API key cannot change or delete the user it belongs to/ })
  }
  t.same((await app.inject({ url: `/api/users/${owner.id}`, headers: bearer(owner.token) })).json().data, before, 'the owner is as they were')
  t.equal((await app.inject({ url: '/api/profile', headers: bearer(owner.token) })).statusCode, 200, 'and their token still works')

  // Another user: the key does what user-edit and user-delete allow, a password included.
  const changed = await app.inject({ method: 'PATCH', url: `/api/users/${other.id}`, headers: bearer(secret), payload: { name: 'Renamed', password: 'a password set by a key', c_password: 'a password set by a key' } })
  t.equal(changed.statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${other.id}`, headers: bearer(secret) })).statusCode, 200)
})

t.test('every write a key may make answers, none 500', async t => {
  const app = await build(t)
  const owner = await userWithRoles(app, ['Admin'])
  const { secret } = await makeKey(app, owner.token, { name: 'all', permissions: ['client-create', 'client-edit', 'client-delete', 'role-create', 'role-edit', 'role-delete', 'user-create', 'user-edit', 'user-delete'] })
  const write = (method: 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
    app.inject({ method, url, headers: bearer(secret), ...(payload ? { payload } : {}) })
  const madeClient = await write('POST', '/api/clients', client)
  t.equal(madeClient.statusCode, 201)
  const clientId = madeClient.json().data.id
  t.equal((await write('PATCH', `/api/clients/${clientId}`, { city: 'Kraków' })).statusCode, 200)
  t.equal((await write('PUT', `/api/clients/${clientId}`, client)).statusCode, 200)
  t.equal((await write('DELETE', `/api/clients/${clientId}`)).statusCode, 200)
  const madeRole = await write('POST', '/api/roles', { name: 'Keyed', permission: ['client-create'] })
  t.equal(madeRole.statusCode, 201)
  const roleId = madeRole.json().data.id
  t.equal((await write('PATCH', `/api/roles/${roleId}`, { name: 'Keyed again' })).statusCode, 200)
  t.equal((await write('DELETE', `/api/roles/${roleId}`)).statusCode, 200)
  const madeUser = await write('POST', '/api/users', { name: 'By Key', email: 'bykey@example.com', password: PASSWORD, c_password: PASSWORD })
  t.equal(madeUser.statusCode, 201)
  const userId = madeUser.json().data.id
  t.equal((await write('PUT', `/api/users/${userId}`, { name: 'By Key', email: 'bykey@example.com', password: 'another password', c_password: 'another password', roles: [] })).statusCode, 200)
  t.equal((await write('DELETE', `/api/users/${userId}`)).statusCode, 200)
})

t.test('making a key needs its maker\'s password: missing 400, wrong 401 counted and audited as a failed login', async t => {
  const app = await build(t, config => { config.auth.rateLimit.perEmail = 3 })
  const owner = await userWithRoles(app, ['Admin'])
  const make = (payload: object) => app.inject({ method: 'POST', url: '/api/keys', headers: bearer(owner.token), payload: { name: 'k', permissions: [], ...payload } })

  const missing = await make({})
  t.equal(missing.statusCode, 400)
  t.match(missing.json(), { success: false, data: { current_password: [/^is needed to make an API key/] } })
  const wrong = await make({ current_password: 'not the password' })
  t.equal(wrong.statusCode, 401)
  t.match(wrong.json(), { success: false, statusCode: 401, message: 'The current password does not match' })
  t.match(wrong.headers['www-authenticate'], /^Bearer/)
  const failed = await app.knex('audit_log').where('action', 'login-failed').select('actor_id', 'resource', 'after')
  t.match(failed, [{ actor_id: owner.id, resource: 'session', after: { email: owner.email, user_id: owner.id } }], 'audited as a failed login')
  t.equal((await make({ current_password: PASSWORD })).statusCode, 201, 'the right one makes the key')
  // Counted with the logins of the address: the third attempt was the last the limit allows.
  const limited = await make({ current_password: PASSWORD })
  t.equal(limited.statusCode, 429)
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: owner.email, password: PASSWORD } })).statusCode, 429, 'as logins are')
  t.equal(await app.knex('api_keys').count({ n: '*' }).first().then(row => Number(row!.n)), 1, 'one key made')
})

t.test('a key whose password check a recovery overtook is refused: the password checked must still be the user\'s in the write', async t => {
  const app = await build(t)
  const owner = await userWithRoles(app, ['User'])
  // A recovery holds the user's row and sets a new password; the key's check reads the password
  // it replaces, and must not insert a key the recovery never saw once it commits.
  const recovery = await app.knex.transaction()
  t.teardown(() => recovery.isCompleted() ? undefined : recovery.rollback())
  await recovery('users').where({ id: owner.id }).forUpdate().select('id')
  await recovery('users').where({ id: owner.id }).update({ password: await app.passwords.hash('set by a recovery') })
  const made = app.inject({ method: 'POST', url: '/api/keys', headers: bearer(owner.token), payload: { name: 'k', permissions: ['client-list'], current_password: PASSWORD } })
  t.ok(await lockWaiters(app, 1), 'the key\'s write waits on the user')
  await recovery.commit()
  const res = await made
  t.equal(res.statusCode, 401)
  t.match(res.json(), { success: false, statusCode: 401, message: /password changed/ })
  t.match(res.headers['www-authenticate'], /^Bearer/)
  t.equal(await app.knex('api_keys').count({ n: '*' }).first().then(row => Number(row!.n)), 0, 'no key made')
  t.equal(await app.knex('audit_log').where('action', 'login-failed').count({ n: '*' }).first().then(row => Number(row!.n)), 0, 'not a failed login: the password sent was the user\'s when checked')
})

t.test('a password set by someone else revokes the user\'s keys; their own change and logging out everywhere keep them', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const owner = await userWithRoles(app, ['User'])
  const keyOf = async (token: string, password = PASSWORD) => (await makeKey(app, token, { name: 'k', permissions: ['client-list'], current_password: password })).secret
  const works = async (key: string) => await status(app, key, 'GET', '/api/clients') === 200

  const kept = await keyOf(owner.token)
  t.ok(await works(kept))
  t.equal((await app.inject({ url: '/api/logout?scope=all', headers: bearer(owner.token) })).statusCode, 200)
  t.ok(await works(kept), 'logging out everywhere keeps the keys')
  let token = await login(app, owner.email)
  const own = await app.inject({ method: 'PATCH', url: '/api/profile', headers: bearer(token), payload: { password: 'my own new password', c_password: 'my own new password', current_password: PASSWORD } })
  t.equal(own.statusCode, 200)
  t.ok(await works(kept), 'so does the owner\'s own password change')

  token = await login(app, owner.email, 'my own new password')
  const second = await keyOf(token, 'my own new password')
  const reset = await app.inject({ method: 'PATCH', url: `/api/users/${owner.id}`, headers: bearer(admin.token), payload: { password: 'set by the admin', c_password: 'set by the admin' } })
  t.equal(reset.statusCode, 200)
  t.notOk(await works(kept), 'an administrator\'s reset revokes every key of the user, cached ones too')
  t.notOk(await works(second))
  t.same((await app.inject({ url: '/api/keys', headers: bearer(await login(app, owner.email, 'set by the admin')) })).json().data, [], 'none listed')
  const revoked = await app.knex('audit_log').where({ action: 'revoke', resource: 'key' }).orderBy('resource_id').select('actor_id', 'resource_id')
  const ids = await app.knex('api_keys').orderBy('id').pluck('id')
  t.same(revoked, ids.map(id => ({ actor_id: admin.id, resource_id: id })), 'each revocation audited, by the administrator')

  // The administrator's own password, through the users routes: their own change, keys kept.
  const adminKey = await keyOf(admin.token)
  t.equal((await app.inject({ method: 'PATCH', url: `/api/users/${admin.id}`, headers: bearer(admin.token), payload: { password: 'the admin\'s new one', c_password: 'the admin\'s new one', current_password: PASSWORD } })).statusCode, 200)
  t.ok(await works(adminKey))
})

t.test('expires_at: a timestamp as the lists take one, or 400 naming it', async t => {
  const app = await build(t)
  const owner = await userWithRoles(app, ['User'])
  const make = (expiresAt: string) => app.inject({ method: 'POST', url: '/api/keys', headers: bearer(owner.token), payload: { name: 'k', permissions: [], expires_at: expiresAt, current_password: PASSWORD } })
  for (const expiresAt of ['2099-01-01T00:00:00+16:00', '2099-01-01T00:00:00-23:59', '2099-01-01T00:00:00+01', '2099-01-01T00:00:00.1234567Z', '0000-01-01T00:00:00Z', '2099-02-30T00:00:00Z']) {
    const res = await make(expiresAt)
    t.equal(res.statusCode, 400, expiresAt)
    t.match(res.json(), { success: false, data: { expires_at: [/must match/] } }, expiresAt)
  }
  for (const [expiresAt, stored] of [['2099-01-01T00:00:00+15:59', '2098-12-31T08:01:00.000Z'], ['2099-01-01T00:00:00-1559', '2099-01-01T15:59:00.000Z'], ['2099-01-01 00:00:00z', '2099-01-01T00:00:00.000Z']]) {
    const res = await make(expiresAt!)
    t.equal(res.statusCode, 201, expiresAt)
    t.equal(res.json().data.expires_at, stored, expiresAt)
  }
  // Year 9999 west of UTC is year 10000 in UTC: refused, not stored to break every list of keys.
  const beyond = await make('9999-12-31T23:59:59-15:59')
  t.equal(beyond.statusCode, 400, 'past the last instant of year 9999 in UTC')
  t.same(beyond.json().data, { expires_at: ['must be before 10000-01-01T00:00:00Z'] })
  t.equal((await make('9999-12-31T23:59:59Z')).statusCode, 201, 'its last second is taken')
  const listed = await app.inject({ url: '/api/keys', headers: bearer(owner.token) })
  t.equal(listed.statusCode, 200, 'every key made is listed')
})
