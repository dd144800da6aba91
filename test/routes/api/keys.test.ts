import { createHash } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'

interface Made { success: true, data: { id: number, user_id: number, name: string, prefix: string, permissions: string[], expires_at: string | null, last_used_at: string | null }, secret: string, message: string }

async function makeKey (app: FastifyInstance, token: string, body: Record<string, unknown>): Promise<Made> {
  const res = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload: body })
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

  const used = await app.knex('api_keys').where('prefix', secret.slice(0, 11)).first('last_used_at')
  t.ok(used.last_used_at, 'its last use is written')
})

t.test('a key holds only permissions its maker holds, and a future expiry', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, ['User'])
  const make = (body: object) => app.inject({ method: 'POST', url: '/api/keys', headers: bearer(user.token), payload: body })

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
    ['POST', '/api/keys', { name: 'chained', permissions: [] }],
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
