import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, lockWaiters } from '../../helper.js'
import { bearer, login, PASSWORD, userWithRoles } from './accounts.js'

const patch = (app: FastifyInstance, token: string, payload: object) =>
  app.inject({ method: 'PATCH', url: '/api/profile', headers: bearer(token), payload })
const profile = async (app: FastifyInstance, token: string) =>
  (await app.inject({ url: '/api/profile', headers: bearer(token) })).statusCode

t.test('a caller without user-edit changes their own name; the answer is their profile, tagged as GET tags it', async t => {
  const app = await build(t)
  const { id, token } = await userWithRoles(app, [])
  const res = await patch(app, token, { name: '  Ada Lovelace  ' })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { success: true, data: { id, name: 'Ada Lovelace', roles: [], permissions: [] }, message: 'Profile updated' })
  const read = await app.inject({ url: '/api/profile', headers: bearer(token) })
  t.equal(read.json().data.name, 'Ada Lovelace')
  t.equal(res.headers.etag, read.headers.etag)
})

t.test('a new e-mail address or password needs the current password; a wrong one is 401 and counts as a failed login', async t => {
  const app = await build(t, config => { config.auth.rateLimit.perEmail = 3 })
  const { email, token } = await userWithRoles(app, [])
  const missing = await patch(app, token, { email: 'new@example.com' })
  t.equal(missing.statusCode, 400)
  t.match(missing.json(), { data: { current_password: [String] } })

  const wrong = await patch(app, token, { email: 'new@example.com', current_password: 'not my password' })
  t.equal(wrong.statusCode, 401)
  t.match(wrong.json(), { success: false, statusCode: 401, message: 'The current password does not match' })
  t.equal(wrong.headers['www-authenticate'], 'Bearer realm="api"')
  t.equal(await profile(app, token), 200, 'the session lives on')

  // userWithRoles' login counted once, this attempt once: a third brings the address to its limit of 3.
  const third = await patch(app, token, { password: 'a brand new password', c_password: 'a brand new password', current_password: 'wrong again' })
  t.equal(third.statusCode, 401)
  const limited = await app.inject({ method: 'POST', url: '/api/login', payload: { email, password: PASSWORD } })
  t.equal(limited.statusCode, 429, 'logins with the address are held back with the profile\'s failures')
})

t.test('an e-mail change with the right password; a taken address is 409 and nothing changes', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, [])
  const other = await userWithRoles(app, [])
  const taken = await patch(app, token, { email: other.email.toUpperCase(), current_password: PASSWORD, name: 'Not Kept' })
  t.equal(taken.statusCode, 409)
  t.not((await app.inject({ url: '/api/profile', headers: bearer(token) })).json().data.name, 'Not Kept', 'nothing half-written')

  const changed = await patch(app, token, { email: 'fresh@example.com', current_password: PASSWORD })
  t.equal(changed.statusCode, 200)
  t.equal(changed.json().data.email, 'fresh@example.com')
  t.ok(await login(app, 'fresh@example.com'), 'logs in under the new address')
})

t.test('a password change ends every other session of the caller; the current one stays', async t => {
  const app = await build(t)
  const { email, token } = await userWithRoles(app, [])
  const other = await login(app, email)
  const mismatch = await patch(app, token, { password: 'a brand new password', c_password: 'another one', current_password: PASSWORD })
  t.equal(mismatch.statusCode, 400)
  t.match(mismatch.json(), { data: { c_password: [String] } })
  t.equal(await profile(app, other), 200, 'a refused change ends nothing')

  const res = await patch(app, token, { password: 'a brand new password', c_password: 'a brand new password', current_password: PASSWORD })
  t.equal(res.statusCode, 200)
  t.equal(await profile(app, token), 200, 'the current session stays')
  t.equal(await profile(app, other), 401, 'the other session has ended')
  t.ok(await login(app, email, 'a brand new password'))
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email, password: PASSWORD } })).statusCode, 401, 'the old password is refused')
})

t.test('a password change and a logout everywhere of the same user at once: both answered, no deadlock', async t => {
  const app = await build(t)
  const { id, email, token } = await userWithRoles(app, [])
  const other = await login(app, email)
  // Both queue behind this lock on the user's row, the password change first: were the logout
  // to end the sessions before it locked the user, the change would wait for those sessions
  // while the logout waited for the user.
  const holder = await app.knex.transaction()
  t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
  await holder('users').where({ id }).forNoKeyUpdate().select('id')
  const change = patch(app, token, { password: 'a brand new password', c_password: 'a brand new password', current_password: PASSWORD })
  t.ok(await lockWaiters(app, 1), 'the change waits on the user')
  const logout = app.inject({ url: '/api/logout?scope=all', headers: bearer(other) })
  t.ok(await lockWaiters(app, 2), 'the logout waits too')
  await holder.commit()
  t.same([(await change).statusCode, (await logout).statusCode], [200, 200])
  t.equal(await profile(app, token), 401, 'the logout everywhere ended the session the change kept')
})

t.test('a profile change whose password check a recovery overtook is refused, and changes nothing', async t => {
  const app = await build(t)
  const { id, email, token } = await userWithRoles(app, [])
  const recovery = await app.knex.transaction()
  t.teardown(() => recovery.isCompleted() ? undefined : recovery.rollback())
  await recovery('users').where({ id }).forUpdate().select('id')
  await recovery('users').where({ id }).update({ password: await app.passwords.hash('set by a recovery') })
  const change = patch(app, token, { email: 'taken.over@example.com', current_password: PASSWORD })
  t.ok(await lockWaiters(app, 1), 'the change waits on the user')
  await recovery.commit()
  const res = await change
  t.equal(res.statusCode, 401)
  t.match(res.json(), { success: false, statusCode: 401, message: /password changed/ })
  t.equal((await app.knex('users').where({ id }).first('email')).email, email, 'the address stays')
})

t.test('bad bodies are 400 naming what is wrong', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, [])
  for (const [payload, field] of [
    [{}, null], [{ current_password: PASSWORD }, 'body'], [{ roles: ['Admin'] }, 'roles'], [{ name: '' }, 'name'],
    [{ email: 'not an address', current_password: PASSWORD }, 'email'], [{ password: 'short', c_password: 'short', current_password: PASSWORD }, 'password'],
    [{ c_password: 'a confirmation of nothing', current_password: PASSWORD }, 'c_password']
  ] as const) {
    const res = await patch(app, token, payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.match(res.json(), { success: false, statusCode: 400 })
    if (field) t.ok(field in res.json().data, `names ${field}: ${res.body}`)
  }
  t.equal((await app.inject({ method: 'PATCH', url: '/api/profile', payload: { name: 'X' } })).statusCode, 401, 'no token')
})

t.test('a current password sent is checked whatever changes: a wrong one with a new name alone is 401, audited as a failed login', async t => {
  const app = await build(t)
  const { id, email, token } = await userWithRoles(app, [])
  const wrong = await patch(app, token, { name: 'Taken Over', current_password: 'not my password' })
  t.equal(wrong.statusCode, 401)
  t.match(wrong.json(), { success: false, statusCode: 401, message: 'The current password does not match' })
  t.equal((await app.inject({ url: '/api/profile', headers: bearer(token) })).json().data.name, 'Test User', 'the name is as it was')
  const failed = await app.knex('audit_log').where('action', 'login-failed').select('actor_id', 'session_id', 'resource', 'resource_id', 'after')
  t.equal(failed.length, 1)
  t.match(failed[0], { actor_id: id, session_id: /^[1-9]/, resource: 'session', resource_id: null, after: { email, user_id: id } })
  t.equal(await app.knex('audit_log').where('action', 'update').count({ n: '*' }).first().then(row => Number(row!.n)), 0, 'no change audited')

  const right = await patch(app, token, { name: 'Ada', current_password: PASSWORD })
  t.equal(right.statusCode, 200)
  t.equal(right.json().data.name, 'Ada')
})

t.test('If-Match on a profile change: the tag of GET /api/profile, 412 when stale, 400 when malformed', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, [])
  const tagged = (ifMatch: string, payload: object) => app.inject({ method: 'PATCH', url: '/api/profile', headers: { ...bearer(token), 'if-match': ifMatch }, payload })
  const read = await app.inject({ url: '/api/profile', headers: bearer(token) })
  const etag = read.headers.etag as string

  const changed = await tagged(etag, { name: 'First' })
  t.equal(changed.statusCode, 200)
  t.not(changed.headers.etag, etag)
  const stale = await tagged(etag, { name: 'Second' })
  t.equal(stale.statusCode, 412)
  t.equal(stale.headers.etag, changed.headers.etag, 'with the current tag')
  t.match(stale.json(), { success: false, statusCode: 412 })
  const malformed = await tagged('not a tag', { name: 'Third' })
  t.equal(malformed.statusCode, 400)
  t.match(malformed.json(), { success: false, data: { 'if-match': [String] } })
  t.equal((await app.inject({ url: '/api/profile', headers: bearer(token) })).json().data.name, 'First', 'neither wrote')
  t.equal((await tagged(changed.headers.etag as string, { name: 'Fourth' })).statusCode, 200)
  t.equal((await tagged('*', { name: 'Fifth' })).statusCode, 200)
})

t.test('REQUIRE_IF_MATCH: a profile change without If-Match is 428, before its password is checked; a key or a session ends without one', async t => {
  const app = await build(t, { requireIfMatch: true })
  const { email, token } = await userWithRoles(app, [])
  const res = await patch(app, token, { name: 'Untagged', current_password: 'not my password' })
  t.equal(res.statusCode, 428)
  t.match(res.json(), { success: false, statusCode: 428 })
  t.equal(await app.knex('audit_log').where('action', 'login-failed').count({ n: '*' }).first().then(row => Number(row!.n)), 0, 'not counted as a failed login')
  const etag = (await app.inject({ url: '/api/profile', headers: bearer(token) })).headers.etag as string
  t.equal((await app.inject({ method: 'PATCH', url: '/api/profile', headers: { ...bearer(token), 'if-match': etag }, payload: { name: 'Tagged' } })).statusCode, 200)

  // Exempt, as the README and the OpenAPI document say: no read tags a key or a session.
  const made = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload: { name: 'k', permissions: [], current_password: PASSWORD } })
  t.equal((await app.inject({ method: 'DELETE', url: `/api/keys/${made.json().data.id}`, headers: bearer(token) })).statusCode, 200, 'a key is revoked without If-Match')
  await login(app, email)
  const other = (await app.inject({ url: '/api/sessions', headers: bearer(token) })).json().data.find((session: { current: boolean }) => !session.current)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/sessions/${other.id}`, headers: bearer(token) })).statusCode, 200, 'a session is ended without If-Match')
})

t.test('a wrong current password\'s audit entry is a guarded write: a 503 never follows it', async t => {
  const app = await build(t, config => { config.timeouts.handler = 2_000 })
  const { token } = await userWithRoles(app, [])
  // Another transaction holds the audit log, so that the entry waits past HANDLER_TIMEOUT.
  const holder = await app.knex.transaction()
  await holder.raw('lock table audit_log in share mode')
  const answer = patch(app, token, { name: 'Taken Over', current_password: 'not my password' })
  t.ok(await lockWaiters(app, 1), 'the entry waits')
  await new Promise(resolve => setTimeout(resolve, 3_000))
  await holder.commit()
  t.equal((await answer).statusCode, 401, 'answered by the write, not by the time limit')
  t.equal(await app.knex('audit_log').where('action', 'login-failed').count({ n: '*' }).first().then(row => Number(row!.n)), 1, 'and written')
})
