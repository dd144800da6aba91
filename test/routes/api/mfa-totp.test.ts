import { createHash } from 'node:crypto'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import { build, buildApp, createDatabase, lockWaiters, testConfig, within } from '../../helper.js'
import { bearer, PASSWORD, roleWithPermissions, userWithRoles } from './accounts.js'

/** The authenticator app's code `offsetSeconds` from now. */
const codeOf = (secret: string, offsetSeconds = 0) => generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + offsetSeconds })

const post = (app: FastifyInstance, url: string, payload: object, token?: string) =>
  app.inject({ method: 'POST', url, payload, ...(token === undefined ? {} : { headers: bearer(token) }) })
const startLogin = (app: FastifyInstance, email: string, password = PASSWORD) => post(app, '/api/login', { email, password })
const status = async (app: FastifyInstance, token: string) => (await app.inject({ url: '/api/profile/mfa', headers: bearer(token) })).json().data

/** A user with a confirmed authenticator app: its secret, recovery codes, and a token of theirs. */
async function enrolled (app: FastifyInstance, roles: string[] = []) {
  const user = await userWithRoles(app, roles)
  const started = await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, user.token)
  const { secret } = started.json().data as { secret: string }
  const confirmed = await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(secret) }, user.token)
  const { recovery_codes: recoveryCodes } = confirmed.json().data as { recovery_codes: string[] }
  return { ...user, secret, recoveryCodes }
}

/** The mfa_token of a login of `email`. */
async function challenge (app: FastifyInstance, email: string): Promise<string> {
  const res = await startLogin(app, email)
  if (res.statusCode !== 200 || res.json().mfa_required !== true) throw new Error(`no second step: ${res.body}`)
  return res.json().mfa_token
}

t.test('enrolling an authenticator app: a secret, its URI and QR code; on only once its first code confirms it', async t => {
  const app = await build(t)
  const { email, token } = await userWithRoles(app, [])
  t.same(await status(app, token), { totp: { enabled: false, pending: false, confirmed_at: null }, recovery_codes_left: 0 })

  const wrongPassword = await post(app, '/api/profile/mfa/totp', { current_password: 'not it' }, token)
  t.equal(wrongPassword.statusCode, 401)
  t.equal(wrongPassword.json().code, 'invalid_credentials')

  const started = await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, token)
  t.equal(started.statusCode, 200)
  const { secret, otpauth_uri: uri, qr_code_svg: svg } = started.json().data
  t.match(secret, /^[A-Z2-7]{32}$/)
  const parsed = new URL(uri)
  t.equal(parsed.protocol, 'otpauth:')
  t.equal(decodeURIComponent(parsed.pathname), `/Student Records:${email}`)
  t.equal(parsed.searchParams.get('secret'), secret)
  t.equal(parsed.searchParams.get('issuer'), 'Student Records')
  t.match(svg, /^<svg [^>]*xmlns="http:\/\/www\.w3\.org\/2000\/svg"/)
  t.match(await status(app, token), { totp: { enabled: false, pending: true } })

  const plain = await startLogin(app, email)
  t.ok(plain.json().data, 'an enrolment not confirmed changes nothing for logins')

  const wrong = await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(secret, 300) }, token)
  t.equal(wrong.statusCode, 400)
  t.match(wrong.json(), { code: 'invalid_body', data: { code: [String] } })

  const confirmed = await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(secret) }, token)
  t.equal(confirmed.statusCode, 200)
  const codes = confirmed.json().data.recovery_codes as string[]
  t.equal(codes.length, 10)
  t.equal(new Set(codes).size, 10)
  for (const code of codes) t.match(code, /^[a-z2-9]{5}-[a-z2-9]{5}$/)
  t.match(await status(app, token), { totp: { enabled: true, pending: false, confirmed_at: String }, recovery_codes_left: 10 })

  const again = await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, token)
  t.equal(again.statusCode, 409)
  t.equal(again.json().code, 'mfa_enrolled')
  const noneLeft = await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(secret) }, token)
  t.equal(noneLeft.statusCode, 409)
  t.equal(noneLeft.json().code, 'mfa_not_enrolled')
})

t.test('the password asked again is taken as it is, spaces around it included', async t => {
  const app = await build(t)
  const password = '  spaced out password  '
  const registered = await post(app, '/api/register', { name: 'Spacey', email: 'spacey@example.com', password, c_password: password })
  const token = registered.json().data
  t.equal((await post(app, '/api/profile/mfa/totp', { current_password: password.trim() }, token)).statusCode, 401, 'the password without its spaces is another')
  t.equal((await post(app, '/api/profile/mfa/totp', { current_password: password }, token)).statusCode, 200)
})

t.test('a login of an enrolled user waits for a code; the code starts the session, and works once', async t => {
  const app = await build(t)
  const { email, secret } = await enrolled(app)
  const first = await startLogin(app, email)
  t.equal(first.statusCode, 200)
  const body = first.json()
  t.match(body, { success: true, mfa_required: true, mfa_token: /^[A-Za-z0-9_-]{43}$/, expires_in: 300 })
  t.notOk('data' in body, 'no access token before the code')

  // The confirmation spent its code's step: the next step's code (the app a little ahead) works.
  const { last_step: confirmedStep } = await app.knex('totp_factors').first('last_step')
  const replayed = await post(app, '/api/login/mfa', { mfa_token: body.mfa_token, code: generateSync({ secret, epoch: Number(confirmedStep) * 30 }) })
  t.equal(replayed.statusCode, 401, 'the code the confirmation took is not taken again')
  t.equal(replayed.json().code, 'invalid_mfa_code')
  const done = await post(app, '/api/login/mfa', { mfa_token: body.mfa_token, code: codeOf(secret, 30) })
  t.equal(done.statusCode, 200)
  t.match(done.json(), { success: true, data: String, refresh_token: String, token_type: 'Bearer' })
  t.equal((await app.inject({ url: '/api/profile', headers: bearer(done.json().data) })).statusCode, 200)

  const spent = await post(app, '/api/login/mfa', { mfa_token: body.mfa_token, code: codeOf(secret, 30) })
  t.equal(spent.statusCode, 401)
  t.equal(spent.json().code, 'invalid_mfa_token')
  t.equal(spent.headers['www-authenticate'], 'Bearer realm="api"')

  const second = await challenge(app, email)
  const reused = await post(app, '/api/login/mfa', { mfa_token: second, code: codeOf(secret, 30) })
  t.equal(reused.statusCode, 401, 'a code accepted once is refused in another login')
  t.equal(reused.json().code, 'invalid_mfa_code')
})

t.test('a recovery code stands in for the app once; new ones void the old', async t => {
  const app = await build(t)
  const { email, token, recoveryCodes } = await enrolled(app)
  const [first, second] = recoveryCodes as [string, string]
  // As typed off paper: upper case, a space for the dash.
  const done = await post(app, '/api/login/mfa', { mfa_token: await challenge(app, email), recovery_code: first.toUpperCase().replace('-', ' ') })
  t.equal(done.statusCode, 200)
  const again = await post(app, '/api/login/mfa', { mfa_token: await challenge(app, email), recovery_code: first })
  t.equal(again.statusCode, 401)
  t.equal(again.json().code, 'invalid_mfa_code')
  t.equal((await status(app, token)).recovery_codes_left, 9)

  const wrongPassword = await post(app, '/api/profile/mfa/recovery-codes', { current_password: 'not it' }, token)
  t.equal(wrongPassword.statusCode, 401)
  const renewed = await post(app, '/api/profile/mfa/recovery-codes', { current_password: PASSWORD }, token)
  t.equal(renewed.statusCode, 200)
  t.equal(renewed.json().data.recovery_codes.length, 10)
  const old = await post(app, '/api/login/mfa', { mfa_token: await challenge(app, email), recovery_code: second })
  t.equal(old.statusCode, 401, 'a code of the earlier set no longer works')
  const fresh = await post(app, '/api/login/mfa', { mfa_token: await challenge(app, email), recovery_code: renewed.json().data.recovery_codes[0] })
  t.equal(fresh.statusCode, 200)
})

t.test('the fifth wrong code spends the login; an expired one, or one of a password changed since, is refused', async t => {
  const app = await build(t)
  const { id, email, secret } = await enrolled(app)
  const token = await challenge(app, email)
  for (let i = 0; i < 5; i++) {
    const wrong = await post(app, '/api/login/mfa', { mfa_token: token, code: codeOf(secret, 600) })
    t.equal(wrong.json().code, 'invalid_mfa_code')
  }
  const late = await post(app, '/api/login/mfa', { mfa_token: token, code: codeOf(secret, 30) })
  t.equal(late.statusCode, 401)
  t.equal(late.json().code, 'invalid_mfa_token', 'the right code after five wrong ones comes too late')

  const expired = await challenge(app, email)
  await app.knex('mfa_challenges').where({ user_id: id }).update({ expires_at: app.knex.raw('now() - interval \'1 second\'') })
  t.equal((await post(app, '/api/login/mfa', { mfa_token: expired, code: codeOf(secret, 30) })).json().code, 'invalid_mfa_token')

  // A code step kept by an instance whose clock ran ahead: no code of now comes after it.
  await app.knex('totp_factors').where({ user_id: id }).update({ last_step: Math.floor(Date.now() / 30_000) + 100 })
  const ahead = await post(app, '/api/login/mfa', { mfa_token: await challenge(app, email), code: codeOf(secret) })
  t.equal(ahead.json().code, 'invalid_mfa_code')
  await app.knex('totp_factors').where({ user_id: id }).update({ last_step: Math.floor(Date.now() / 30_000) - 5 })

  const stale = await challenge(app, email)
  // What the challenge keeps of the password: a digest of its hash, not the hash.
  const { password } = await app.knex('users').where({ id }).first('password')
  const kept = await app.knex('mfa_challenges').where({ user_id: id }).select('password_digest') as Array<{ password_digest: Buffer }>
  t.ok(kept.length > 0 && kept.every(row => row.password_digest.equals(createHash('sha256').update(password).digest())), 'the SHA-256 of the password hash')
  await app.knex('users').where({ id }).update({ password: await app.passwords.hash('another password entirely') })
  t.equal((await post(app, '/api/login/mfa', { mfa_token: stale, code: codeOf(secret, 30) })).json().code, 'invalid_mfa_token')
})

t.test('ten wrong codes in a row, across logins, hold the app\'s codes back for 15 minutes; a recovery code still works', async t => {
  const app = await build(t)
  const { id, email, secret, recoveryCodes } = await enrolled(app)
  for (let login = 0; login < 2; login++) {
    const token = await challenge(app, email)
    for (let i = 0; i < 5; i++) t.equal((await post(app, '/api/login/mfa', { mfa_token: token, code: codeOf(secret, 600) })).json().code, 'invalid_mfa_code')
  }
  const token = await challenge(app, email)
  const locked = await post(app, '/api/login/mfa', { mfa_token: token, code: codeOf(secret, 30) })
  t.equal(locked.statusCode, 429, 'the right code waits too')
  t.equal(locked.json().code, 'rate_limited')
  t.ok(Number(locked.headers['retry-after']) > 890 && Number(locked.headers['retry-after']) <= 900, `Retry-After ${locked.headers['retry-after']}`)
  const recovered = await post(app, '/api/login/mfa', { mfa_token: token, recovery_code: recoveryCodes[0] })
  t.equal(recovered.statusCode, 200, 'the refusal did not spend the login: a recovery code completes it')

  await app.knex('totp_factors').where({ user_id: id }).update({ locked_until: app.knex.raw('now()') })
  const done = await post(app, '/api/login/mfa', { mfa_token: await challenge(app, email), code: codeOf(secret, 30) })
  t.equal(done.statusCode, 200, 'once the lock is over, the code works')
  t.match(await app.knex('totp_factors').where({ user_id: id }).first('failures'), { failures: 0 }, 'and the count starts again')
})

t.test('the fifth wrong code of a confirmation ends the enrolment', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, [])
  const { secret } = (await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, token)).json().data
  for (let i = 0; i < 5; i++) {
    const wrong = await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(secret, 600) }, token)
    t.equal(wrong.json().code, 'invalid_body')
  }
  const late = await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(secret) }, token)
  t.equal(late.statusCode, 409)
  t.equal(late.json().code, 'mfa_not_enrolled')
  t.match(await status(app, token), { totp: { enabled: false, pending: false } })

  // Started again: four wrong codes, a restart, and the count starts over.
  const first = (await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, token)).json().data.secret
  for (let i = 0; i < 4; i++) await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(first, 600) }, token)
  const again = (await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, token)).json().data.secret
  t.equal((await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(again, 600) }, token)).statusCode, 400)
  t.equal((await post(app, '/api/profile/mfa/totp/confirm', { code: codeOf(again) }, token)).statusCode, 200, 'a new enrolment\'s count is its own')
})

t.test('a body with neither or both of code and recovery_code is 400; a token never issued is 401', async t => {
  const app = await build(t)
  const { email, secret } = await enrolled(app)
  const token = await challenge(app, email)
  for (const payload of [{ mfa_token: token }, { mfa_token: token, code: codeOf(secret, 30), recovery_code: 'abcde-fghjk' }, { mfa_token: token, code: '12345' }, { mfa_token: 'x', code: '123456' }]) {
    const res = await post(app, '/api/login/mfa', payload)
    t.equal(res.statusCode, 400, JSON.stringify(payload))
    t.equal(res.json().code, 'invalid_body')
  }
  t.match((await post(app, '/api/login/mfa', { mfa_token: token })).json().data, { code: ['is required'], recovery_code: ['is required'] }, 'the answer names what is missing')
  const unknown = await post(app, '/api/login/mfa', { mfa_token: 'A'.repeat(43), code: codeOf(secret, 30) })
  t.equal(unknown.json().code, 'invalid_mfa_token')
  t.equal((await post(app, '/api/login/mfa', { mfa_token: token, code: codeOf(secret, 30) })).statusCode, 200, 'the refusals spent nothing')
})

t.test('one code sent twice at once, for one login and for two: one session starts', async t => {
  const app = await build(t)
  const { email, secret } = await enrolled(app)
  const token = await challenge(app, email)
  const code = codeOf(secret, 30)
  const same = await Promise.all([0, 1].map(() => post(app, '/api/login/mfa', { mfa_token: token, code })))
  t.same(same.map(res => res.statusCode).sort(), [200, 401])

  const [one, two] = [await challenge(app, email), await challenge(app, email)]
  // The step of `code` taken again: a code of one step ahead works once more.
  await app.knex('totp_factors').update({ last_step: app.knex.raw('last_step - 2') })
  const later = codeOf(secret, 30)
  const both = await Promise.all([one, two].map(mfaToken => post(app, '/api/login/mfa', { mfa_token: mfaToken, code: later })))
  t.same(both.map(res => res.statusCode).sort(), [200, 401])
})

t.test('turning the app off needs the password, ends waiting logins, and logins need the password only again', async t => {
  const app = await build(t)
  const { email, token, secret } = await enrolled(app)
  const waiting = await challenge(app, email)
  const wrong = await app.inject({ method: 'DELETE', url: '/api/profile/mfa/totp', headers: bearer(token), payload: { current_password: 'not it' } })
  t.equal(wrong.statusCode, 401)
  const off = await app.inject({ method: 'DELETE', url: '/api/profile/mfa/totp', headers: bearer(token), payload: { current_password: PASSWORD } })
  t.equal(off.statusCode, 200)
  t.same(await status(app, token), { totp: { enabled: false, pending: false, confirmed_at: null }, recovery_codes_left: 0 })
  t.equal((await post(app, '/api/login/mfa', { mfa_token: waiting, code: codeOf(secret, 30) })).json().code, 'invalid_mfa_token')
  t.ok((await startLogin(app, email)).json().data, 'a login answers tokens again')
  const twice = await app.inject({ method: 'DELETE', url: '/api/profile/mfa/totp', headers: bearer(token), payload: { current_password: PASSWORD } })
  t.equal(twice.statusCode, 409)
  t.equal(twice.json().code, 'mfa_not_enrolled')
  const noCodes = await post(app, '/api/profile/mfa/recovery-codes', { current_password: PASSWORD }, token)
  t.equal(noCodes.json().code, 'mfa_not_enrolled')
})

t.test('every step is audited; no secret, code or token is in the log', async t => {
  const app = await build(t)
  const { id, email, secret, recoveryCodes } = await enrolled(app)
  const token = await challenge(app, email)
  const code = codeOf(secret, 600)
  await post(app, '/api/login/mfa', { mfa_token: token, code })
  const done = await post(app, '/api/login/mfa', { mfa_token: token, code: codeOf(secret, 30) })
  t.equal(done.statusCode, 200)
  const entries = await app.knex('audit_log').where(builder => builder.where('actor_id', id).orWhere('resource_id', id).orWhereRaw('(after->>\'user_id\')::int = ?', [id])).orderBy('id')
  t.same(entries.map(entry => entry.action), ['login', 'mfa-start', 'mfa-enable', 'mfa-challenge', 'login-failed', 'login'])
  t.match(entries.at(-1), { action: 'login', resource: 'session', actor_id: id, after: { user_id: id, factor: 'totp' } })
  t.match(entries.at(-2), { action: 'login-failed', actor_id: null, after: { user_id: id, factor: 'totp' } })
  const written = JSON.stringify(entries)
  for (const secretThing of [secret, token, code, ...recoveryCodes]) t.notOk(written.includes(secretThing), 'no secret in the audit log')
})

t.test('an API key cannot see nor change second factors', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, ['Admin'])
  const key = await post(app, '/api/keys', { name: 'ci', permissions: ['client-list'], current_password: PASSWORD }, token)
  t.equal(key.statusCode, 201)
  const headers = bearer(key.json().secret)
  const read = await app.inject({ url: '/api/profile/mfa', headers })
  t.equal(read.statusCode, 403)
  t.equal(read.json().code, 'access_token_required')
  t.equal((await app.inject({ method: 'POST', url: '/api/profile/mfa/totp', headers, payload: { current_password: PASSWORD } })).statusCode, 403)
})

t.test('MFA_REQUIRED_ROLES: a holder without a factor gets tokens that serve only its enrolment, on every instance, and keys that serve nothing', async t => {
  const db = await createDatabase(t, { migrated: true })
  const open = await buildApp(t, testConfig(db))
  // Named in another case than the role's: role names match whatever their case.
  const strict = await buildApp(t, testConfig(db, config => { config.auth.mfaRequiredRoles = ['admin'] }))
  const other = await buildApp(t, testConfig(db, config => { config.auth.mfaRequiredRoles = ['admin'] }))
  const admin = await userWithRoles(open, ['Admin'])
  const key = await post(open, '/api/keys', { name: 'export', permissions: ['client-list'], current_password: PASSWORD }, admin.token)
  t.equal(key.statusCode, 201)
  const byKey = bearer(key.json().secret)
  const plain = await userWithRoles(strict, [])
  t.equal((await strict.inject({ url: '/api/sessions', headers: bearer(plain.token) })).statusCode, 200, 'a user without the role is as before')

  const clients = (app: FastifyInstance, headers: Record<string, string>) => app.inject({ url: '/api/clients', headers })
  const refused = await clients(strict, bearer(admin.token))
  t.equal(refused.statusCode, 403)
  t.equal(refused.json().code, 'mfa_enrolment_required')
  t.equal((await clients(other, bearer(admin.token))).statusCode, 403, 'the other instance caches the refusal')
  t.equal((await clients(strict, byKey)).json().code, 'mfa_enrolment_required', 'the key serves nothing')
  t.equal((await strict.inject({ method: 'POST', url: '/api/keys', headers: bearer(admin.token), payload: { name: 'k', permissions: [], current_password: PASSWORD } })).statusCode, 403)
  t.equal((await strict.inject({ url: '/api/profile', headers: bearer(admin.token) })).statusCode, 200, 'the profile still reads')
  t.equal((await clients(open, bearer(admin.token))).statusCode, 200, 'an instance without the setting serves it')

  const started = await post(strict, '/api/profile/mfa/totp', { current_password: PASSWORD }, admin.token)
  t.equal(started.statusCode, 200)
  const confirmed = await post(strict, '/api/profile/mfa/totp/confirm', { code: codeOf(started.json().data.secret) }, admin.token)
  t.equal(confirmed.statusCode, 200)
  t.equal((await clients(strict, bearer(admin.token))).statusCode, 200, 'the same token serves everything once the factor is on')
  t.equal((await clients(strict, byKey)).statusCode, 200, 'and so does the key')
  t.ok(await within(2_000, async () => (await clients(other, bearer(admin.token))).statusCode === 200), 'the other instance hears of the factor')

  const off = await strict.inject({ method: 'DELETE', url: '/api/profile/mfa/totp', headers: bearer(admin.token), payload: { current_password: PASSWORD } })
  t.equal(off.statusCode, 200)
  t.equal((await clients(strict, bearer(admin.token))).json().code, 'mfa_enrolment_required', 'a factor turned off brings the restriction back')
  t.ok(await within(2_000, async () => (await clients(other, bearer(admin.token))).statusCode === 403), 'on the other instance too')
})

t.test('a user who lost the app and its recovery codes: one who may edit them turns it off, with their own password', async t => {
  const app = await build(t)
  const user = await enrolled(app)
  const admin = await userWithRoles(app, ['Admin'])
  const remove = (token: string, id: number, payload?: object) =>
    app.inject({ method: 'DELETE', url: `/api/users/${id}/mfa`, headers: bearer(token), ...(payload === undefined ? {} : { payload }) })

  t.match((await remove(admin.token, user.id)).json(), { statusCode: 400, code: 'invalid_body', data: { current_password: [/^is needed to turn a user's second factor off/] } })
  t.equal((await remove(admin.token, user.id, { current_password: 'not it' })).statusCode, 401)
  await roleWithPermissions(app, 'Helpdesk', ['user-list', 'user-edit'])
  const helpdesk = await userWithRoles(app, ['Helpdesk'])
  t.equal((await remove(admin.token, helpdesk.id, { current_password: PASSWORD })).statusCode, 409, 'a user without an app: nothing to turn off')
  const otherAdmin = await enrolled(app, ['Admin'])
  t.match((await remove(helpdesk.token, otherAdmin.id, { current_password: PASSWORD })).json(), { statusCode: 403, message: /holds permissions you lack/ }, 'nobody acts on a user holding more than they do')
  t.match(await status(app, otherAdmin.token), { totp: { enabled: true } }, 'whose app stays on')
  const key = (await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(admin.token), payload: { name: 'k', permissions: ['user-list', 'user-edit'], current_password: PASSWORD } })).json().secret as string
  t.equal((await remove(key, user.id, { current_password: PASSWORD })).json().code, 'access_token_required', 'not with an API key')
  const waiting = await challenge(app, user.email)
  t.equal((await remove(admin.token, 999999, { current_password: PASSWORD })).statusCode, 404)

  const off = await remove(admin.token, user.id, { current_password: PASSWORD })
  t.equal(off.statusCode, 200)
  t.same(off.json().data, null)
  t.ok((await startLogin(app, user.email)).json().data, 'the user logs in with the password alone')
  t.equal((await post(app, '/api/login/mfa', { mfa_token: waiting, code: codeOf(user.secret, 30) })).json().code, 'invalid_mfa_token', 'a login that waited for a code no longer does')
  t.same(await status(app, user.token), { totp: { enabled: false, pending: false, confirmed_at: null }, recovery_codes_left: 0 })
  t.equal((await remove(admin.token, user.id, { current_password: PASSWORD })).json().code, 'mfa_not_enrolled')
  const entries = await app.knex('audit_log').where({ action: 'mfa-disable', resource_id: String(user.id) }).select('actor_id', 'after')
  t.match(entries, [{ actor_id: admin.id, after: { factor: 'totp' } }])
  t.equal(entries.length, 1)
})

t.test('an app confirmed while a login checked the password: the login waits for its code, as it would have', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, [])
  t.equal((await post(app, '/api/profile/mfa/totp', { current_password: PASSWORD }, user.token)).statusCode, 200)
  // The confirmation under way holds the user's row, as it does, while the login's hash is checked.
  const holder = await app.knex.transaction()
  t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
  await holder('users').where({ id: user.id }).forNoKeyUpdate().select('id')
  const login = startLogin(app, user.email)
  t.ok(await lockWaiters(app, 1), 'the login, its password matched, waits for the user\'s row to start its session')
  await holder('totp_factors').where({ user_id: user.id }).update({ confirmed_at: holder.fn.now() })
  await holder.commit()
  const res = await login
  t.equal(res.statusCode, 200)
  t.match(res.json(), { mfa_required: true, mfa_token: String })
  t.equal((await app.knex('sessions').where({ user_id: user.id }).select('id')).length, 1, 'no session but the one before')
})
