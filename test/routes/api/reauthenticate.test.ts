import t, { type Test } from 'tap'
import { randomUUID } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import { build, lockWaiters } from '../../helper.js'
import { bearer, login, PASSWORD, userWithRoles } from './accounts.js'

/** The authenticator app's code `offsetSeconds` from now. */
const codeOf = (secret: string, offsetSeconds = 0) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSeconds })

const post = (app: FastifyInstance, url: string, payload: object, token: string) => app.inject({ method: 'POST', url, payload, headers: bearer(token) })
const reauthenticate = (app: FastifyInstance, token: string, payload: object) => post(app, '/api/profile/reauthenticate', payload, token)
const newKey = (app: FastifyInstance, token: string, extra: object = {}) => post(app, '/api/keys', { name: 'sync', permissions: [], ...extra }, token)
/** The access token's session id. */
const sessionOf = (app: FastifyInstance, token: string) => (app.jwt.decode(token) as { sid: number }).sid
/** The audit entries of `action` of the user, oldest first. */
const audited = async (app: FastifyInstance, action: string, userId: number) =>
  await app.knex('audit_log').where({ action, actor_id: userId }).orderBy('id').select('session_id', 'after') as Array<{ session_id: string, after: Record<string, unknown> }>

/** A user with a confirmed authenticator app (its code of now spent by the confirmation), its secret, and a token of theirs. */
async function enrolled (t: Test, app: FastifyInstance, roles: string[] = []) {
  const user = await userWithRoles(app, roles)
  const { secret } = (await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, user.token)).json().data as { secret: string }
  t.equal((await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(secret) }, user.token)).statusCode, 200, 'enrolled')
  return { ...user, secret }
}

t.test('a session reauthenticated with the password stands for it, in that session only, for 5 minutes', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, [])
  const other = await login(app, user.email)

  const asked = await newKey(app, user.token)
  t.equal(asked.statusCode, 400, 'no password, no reauthentication: asked for one')
  t.match(asked.json(), { code: 'invalid_body', data: { current_password: [/^is needed to make an API key: send it, or reauthenticate this session first \(POST \/api\/profile\/reauthenticate/] } })

  const wrong = await reauthenticate(app, user.token, { current_password: 'not the password' })
  t.equal(wrong.statusCode, 401)
  t.equal(wrong.json().code, 'invalid_credentials')
  t.equal(wrong.headers['www-authenticate'], 'Bearer realm="api"')
  t.equal((await newKey(app, user.token)).statusCode, 400, 'a wrong password proves nothing')

  const before = Date.now()
  const done = await reauthenticate(app, user.token, { current_password: PASSWORD })
  t.equal(done.statusCode, 200)
  t.equal(done.json().success, true)
  const until = Date.parse(done.json().data.reauthenticated_until)
  t.ok(until >= before + 299_000 && until <= Date.now() + 301_000, 'stands 5 minutes')

  const made = await newKey(app, user.token)
  t.equal(made.statusCode, 201, 'a key made without the password')
  t.match(made.json(), { secret: /^sk_/ })
  t.equal((await newKey(app, other)).statusCode, 400, 'another session of the same user is not reauthenticated')
  const wrongAnyway = await newKey(app, user.token, { current_password: 'not the password' })
  t.equal(wrongAnyway.statusCode, 401, 'a password sent is checked all the same')

  // Five minutes on.
  await app.knex('sessions').where({ id: sessionOf(app, user.token) }).update({ reauthenticated_at: app.knex.raw("now() - interval '301 seconds'") })
  t.equal((await newKey(app, user.token)).statusCode, 400, 'past 5 minutes, asked again')

  const entries = await audited(app, 'reauthenticate', user.id)
  t.equal(entries.length, 1)
  t.match(entries, [{ session_id: String(sessionOf(app, user.token)), after: { user_id: user.id, factor: 'password' } }])
  const failures = await audited(app, 'login-failed', user.id)
  t.equal(failures.length, 2, 'each wrong password audited as a failed login')
  t.match(failures, [{ after: { user_id: user.id, email: user.email } }, { after: { user_id: user.id, email: user.email } }])
})

t.test('every route that asks for the password again takes the reauthenticated session\'s word, that session\'s only, a body left out', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, ['Admin'])
  const other = await login(app, user.email)
  const etag = async (token: string) => (await app.inject({ url: '/api/profile', headers: bearer(token) })).headers.etag as string
  const { id: passkeyId } = await app.knex('passkeys').insert({ user_id: user.id, credential_id: 'cred-1', public_key: Buffer.from('key'), name: 'Laptop' }).returning('id').then(rows => rows[0] as { id: number })
  // Each sensitive change without current_password, as the token's session asks it; what it answers once the session's word stands.
  const routes: Array<{ name: string, ask: (token: string) => Promise<{ statusCode: number, json: () => any }>, then: number }> = [
    { name: 'a new API key', ask: token => newKey(app, token), then: 201 },
    { name: 'a new e-mail address, through the profile', ask: async token => app.inject({ method: 'PATCH', url: '/api/profile', headers: { ...bearer(token), 'if-match': await etag(token) }, payload: { email: 'new1@example.com' } }), then: 200 },
    { name: 'a new e-mail address of one\'s own, through the users', ask: token => app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: { ...bearer(token), 'if-match': '*' }, payload: { email: 'new2@example.com' } }), then: 200 },
    { name: 'new recovery codes', ask: token => app.inject({ method: 'POST', url: '/api/profile/mfa/recovery-codes', headers: bearer(token) }), then: 409 },
    { name: 'an enrolment of an app', ask: token => app.inject({ method: 'POST', url: '/api/profile/mfa/totp', headers: bearer(token) }), then: 200 },
    { name: 'the app turned off', ask: token => app.inject({ method: 'DELETE', url: '/api/profile/mfa/totp', headers: bearer(token) }), then: 200 },
    { name: 'a passkey\'s options', ask: token => app.inject({ method: 'POST', url: '/api/profile/passkeys/options', headers: bearer(token) }), then: 200 },
    { name: 'a passkey removed', ask: token => app.inject({ method: 'DELETE', url: `/api/profile/passkeys/${passkeyId}`, headers: bearer(token) }), then: 200 },
    { name: 'a user\'s app turned off', ask: token => app.inject({ method: 'DELETE', url: `/api/users/${user.id}/mfa`, headers: bearer(token) }), then: 409 },
    { name: 'a new password of one\'s own', ask: token => app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: { ...bearer(token), 'if-match': '*' }, payload: { password: 'a brand new password', c_password: 'a brand new password' } }), then: 200 }
  ]
  for (const route of routes) {
    const asked = await route.ask(user.token)
    t.equal(asked.statusCode, 400, `${route.name}: asked for the password`)
    t.match(asked.json(), { code: 'invalid_body', data: { current_password: [/: send it, or reauthenticate this session first/] } }, route.name)
  }
  t.equal((await app.inject({ method: 'PATCH', url: '/api/profile', headers: { ...bearer(user.token), 'if-match': await etag(user.token) }, payload: { name: 'A name needs no proof' } })).statusCode, 200)

  t.equal((await reauthenticate(app, user.token, { current_password: PASSWORD })).statusCode, 200)
  for (const route of routes) {
    t.equal((await route.ask(other)).statusCode, 400, `${route.name}: not in another session of the user`)
    const res = await route.ask(user.token)
    t.equal(res.statusCode, route.then, `${route.name}: on the session's word`)
  }
  t.ok(await login(app, 'new2@example.com', 'a brand new password'), 'the new address and password log in')
  const stays = await newKey(app, user.token, { name: 'after the new password' })
  t.equal(stays.statusCode, 201, 'the session the password changed in stays, and its word with it')
})

t.test('a session ended, or its word expired, while a change waited for the user\'s row does not stand for the password', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, [])
  t.equal((await reauthenticate(app, user.token, { current_password: PASSWORD })).statusCode, 200)
  // A logout of the session, holding the user's row, as every change of a user takes it first.
  const holder = await app.knex.transaction()
  t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
  await holder('users').where({ id: user.id }).forNoKeyUpdate().select('id')
  const made = newKey(app, user.token)
  t.ok(await lockWaiters(app, 1), 'the key, its session\'s word taken, waits for the user\'s row')
  await holder('sessions').where({ id: sessionOf(app, user.token) }).update({ ended_at: holder.fn.now(), end_reason: 'logout' })
  await holder.commit()
  const res = await made
  t.equal(res.statusCode, 400)
  t.match(res.json(), { code: 'invalid_body', data: { current_password: [String] } })
  t.same(await app.knex('api_keys').where({ user_id: user.id }).select('id'), [], 'no key made')
})

t.test('with the authenticator app\'s code, once each; an account without an app is told so', async t => {
  const app = await build(t)
  const user = await enrolled(t, app)
  const code = codeOf(user.secret, 30)

  const wrong = await reauthenticate(app, user.token, { code: codeOf(user.secret, 600) })
  t.equal(wrong.statusCode, 401)
  t.equal(wrong.json().code, 'invalid_mfa_code')
  t.equal((await app.knex('totp_factors').where({ user_id: user.id }).first('failures')).failures, 1, 'the wrong code counted')

  t.equal((await reauthenticate(app, user.token, { code })).statusCode, 200)
  const replayed = await reauthenticate(app, user.token, { code })
  t.equal(replayed.statusCode, 401, 'a code accepted once is not accepted again')
  t.equal(replayed.json().code, 'invalid_mfa_code')

  const off = await app.inject({ method: 'DELETE', url: '/api/profile/mfa/totp', headers: bearer(user.token), payload: {} })
  t.equal(off.statusCode, 200, 'the app turned off without the password')
  const entries = await audited(app, 'reauthenticate', user.id)
  t.equal(entries.length, 1)
  t.match(entries, [{ after: { factor: 'totp' } }])
  const failures = await audited(app, 'login-failed', user.id)
  t.equal(failures.length, 2)
  t.match(failures, [{ after: { factor: 'totp' } }, { after: { factor: 'totp' } }])

  const none = await reauthenticate(app, user.token, { code: '123456' })
  t.equal(none.statusCode, 409)
  t.equal(none.json().code, 'mfa_not_enrolled')
})

t.test('the tenth wrong code in a row holds the app\'s codes back, as at login', async t => {
  const app = await build(t)
  const user = await enrolled(t, app)
  await app.knex('totp_factors').where({ user_id: user.id }).update({ failures: 9 })
  t.equal((await reauthenticate(app, user.token, { code: codeOf(user.secret, 600) })).statusCode, 401)
  const held = await reauthenticate(app, user.token, { code: codeOf(user.secret, 30) })
  t.equal(held.statusCode, 429)
  t.ok(Number(held.headers['retry-after']) > 800)
  t.equal((await reauthenticate(app, user.token, { current_password: PASSWORD })).statusCode, 200, 'the password still works')
})

t.test('neither an API key nor a token of no session reauthenticates; one shape of proof at a time', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, ['Admin'])
  const key = (await newKey(app, user.token, { current_password: PASSWORD })).json().secret as string
  const byKey = await reauthenticate(app, key, { current_password: PASSWORD })
  t.equal(byKey.statusCode, 403)
  t.equal(byKey.json().code, 'access_token_required')

  const legacy = app.jwt.sign({ sub: String(user.id), jti: randomUUID(), gen: 0 })
  const noSession = await reauthenticate(app, legacy, { current_password: PASSWORD })
  t.equal(noSession.statusCode, 401)
  t.equal(noSession.json().code, 'invalid_token')
  t.equal((await newKey(app, legacy)).statusCode, 400, 'a token of no session gives the password')

  const both = await reauthenticate(app, user.token, { current_password: PASSWORD, code: '123456' })
  t.equal(both.statusCode, 400)
  t.equal(both.json().code, 'invalid_body')
  t.equal((await audited(app, 'reauthenticate', user.id)).length, 0)
})

t.test('a passkey ceremony answered here is spent by its first answer; a passkey unknown proves nothing', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, [])
  const { passkey_token: token } = (await app.inject({ method: 'POST', url: '/api/login/passkey/options' })).json()
  // The browser's own answers: test/routes/api/passkeys.test.ts.
  const credential = { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'AAAA', authenticatorData: 'AAAA', signature: 'AAAA' }, clientExtensionResults: {} }
  const unknown = await reauthenticate(app, user.token, { passkey_token: token, credential })
  t.equal(unknown.statusCode, 401)
  t.equal(unknown.json().code, 'invalid_passkey')
  const spent = await reauthenticate(app, user.token, { passkey_token: token, credential })
  t.equal(spent.statusCode, 400)
  t.equal(spent.json().code, 'invalid_passkey_token')
  t.match(await audited(app, 'login-failed', user.id), [{ after: { factor: 'passkey' } }])
})

t.test('a session ended while its proof was checked is not reauthenticated', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, [])
  // Another request holds the user's row, and ends the session, as a logout of every session does.
  const holder = await app.knex.transaction()
  t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
  await holder('users').where({ id: user.id }).forNoKeyUpdate().select('id')
  await holder('sessions').where({ id: sessionOf(app, user.token) }).update({ ended_at: holder.fn.now(), end_reason: 'all sessions ended' })
  const proof = reauthenticate(app, user.token, { current_password: PASSWORD })
  t.ok(await lockWaiters(app, 1), 'the proof waits for the user\'s row')
  await holder.commit()
  const res = await proof
  t.equal(res.statusCode, 401)
  t.equal(res.json().code, 'invalid_token')
  t.equal((await audited(app, 'reauthenticate', user.id)).length, 0)
})

t.test('the fifth wrong code tried in a session ends it; a good one starts the count afresh', async t => {
  const app = await build(t)
  const user = await enrolled(t, app)
  const wrong = () => reauthenticate(app, user.token, { code: codeOf(user.secret, 600) })
  for (let i = 0; i < 3; i++) t.equal((await wrong()).statusCode, 401)
  t.equal((await reauthenticate(app, user.token, { code: codeOf(user.secret, 30) })).statusCode, 200, 'a good code')
  for (let i = 0; i < 4; i++) t.equal((await wrong()).json().code, 'invalid_mfa_code', 'counted afresh')
  const fifth = await wrong()
  t.equal(fifth.statusCode, 401)
  t.match(fifth.json(), { code: 'invalid_mfa_code', message: /the 5th wrong proof ended this session: log in again$/ })
  t.equal((await app.inject({ url: '/api/profile', headers: bearer(user.token) })).statusCode, 401, 'the session has ended')
  t.match(await audited(app, 'end', user.id), [{ session_id: String(sessionOf(app, user.token)), after: { end_reason: 'reauthentication failed' } }])
})

t.test('a user whose role requires a second factor may reauthenticate to enrol one', async t => {
  // Beside it, a role of no such name: warned of at start (test/server/startup.test.ts); the role that is holds all the same.
  const app = await build(t, config => { config.auth.mfaRequiredRoles = ['Admin', 'Auditors'] })
  const user = await userWithRoles(app, ['Admin'])
  t.equal((await newKey(app, user.token, { current_password: PASSWORD })).json().code, 'mfa_enrolment_required')
  t.equal((await reauthenticate(app, user.token, { current_password: PASSWORD })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/api/profile/mfa/totp', headers: bearer(user.token) })).statusCode, 200, 'the enrolment starts without the password')
})
