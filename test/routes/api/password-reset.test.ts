import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, lockWaiters, within } from '../../helper.js'
import { buildWithMail as withMail, PUBLIC_URL, recipients } from '../../mail-server.js'
import { bearer, login, PASSWORD, userWithRoles } from './accounts.js'

const NEW_PASSWORD = 'a new password, long enough'

const forgot = (app: FastifyInstance, email: string) => app.inject({ method: 'POST', url: '/api/password/forgot', payload: { email } })
const reset = (app: FastifyInstance, token: string, password = NEW_PASSWORD, confirmation = password) =>
  app.inject({ method: 'POST', url: '/api/password/reset', payload: { token, password, c_password: confirmation } })
/** The token of a reset mail's link. */
const tokenOf = (text: string | undefined) => /reset-password\?token=([A-Za-z0-9_-]{43})/.exec(text ?? '')?.[1] ?? ''

t.test('a forgotten password: a mail with a link, a reset with its token, every session and key ended, all audited without a secret', async t => {
  const { app, mail } = await withMail(t)
  const user = await userWithRoles(app, ['Admin'])
  const key = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(user.token), payload: { name: 'sync', permissions: ['client-list'], current_password: PASSWORD } })
  const secret = key.json<{ secret: string }>().secret
  // A passkey of the user's (its registration in a browser: test/routes/api/passkeys.test.ts).
  await app.knex('passkeys').insert({ user_id: user.id, credential_id: 'cred-1', public_key: Buffer.from('key'), name: 'Laptop' })

  const asked = await forgot(app, user.email.toUpperCase())
  t.equal(asked.statusCode, 202)
  t.same(asked.json(), { success: true, message: 'If a user has this address, a link to reset the password is on its way to it' })
  const message = await mail.next()
  t.equal(message.subject, 'Reset your password')
  t.same(recipients(message), [user.email], 'to the address the user has, not as it was typed')
  t.equal(message.from?.value[0]?.address, 'records@example.com')
  const token = tokenOf(message.text)
  t.equal(token.length, 43, 'the plain text holds the link')
  t.ok(String(message.html).includes(`href="${PUBLIC_URL}/reset-password?token=${token}"`), 'the HTML too, from PUBLIC_URL')
  t.ok(message.text!.includes('60 minutes'))

  t.match((await reset(app, token, NEW_PASSWORD, 'something else')).json(), { statusCode: 400, code: 'invalid_body', param: 'c_password' })
  const done = await reset(app, token)
  t.equal(done.statusCode, 200)
  t.match(done.json(), { success: true, message: /every session and API key/ })
  t.match((await reset(app, token)).json(), { statusCode: 400, code: 'invalid_reset_token' }, 'a token works once')

  t.match((await app.inject({ url: '/api/profile', headers: bearer(user.token) })).json(), { statusCode: 401 }, 'the old session has ended')
  t.match((await app.inject({ url: '/api/clients', headers: bearer(secret) })).json(), { statusCode: 401 }, 'the API key too')
  t.same(await app.knex('passkeys').where({ user_id: user.id }).select('id'), [], 'and the passkeys: a way in without the password')
  t.match((await app.inject({ method: 'POST', url: '/api/login', payload: { email: user.email, password: PASSWORD } })).json(), { statusCode: 401 }, 'the old password no more')
  const fresh = await login(app, user.email, NEW_PASSWORD)

  const audit = (await app.inject({ url: '/api/audit?sort=id', headers: bearer(fresh) })).json<{ data: Array<Record<string, unknown>> }>().data
  const entries = audit.filter(entry => ['reset-request', 'reset-password', 'passkey-remove'].includes(entry.action as string) || (entry.action === 'revoke' && entry.resource === 'key'))
  t.match(entries, [
    { action: 'reset-request', resource: 'user', resource_id: user.id, actor_id: null },
    // Written in the reset's transaction as it revokes them, before the reset's own.
    { action: 'revoke', resource: 'key', actor_id: user.id },
    { action: 'passkey-remove', resource: 'passkey', actor_id: user.id, before: { user_id: user.id, name: 'Laptop' } },
    { action: 'reset-password', resource: 'user', resource_id: user.id, actor_id: user.id, before: { password: '[redacted]' }, after: { password: '[redacted]' } }
  ])
  t.notOk(JSON.stringify(audit).includes(token), 'no entry holds the token')
})

t.test('an address no user has: the same answer, and no mail; only the latest token works, and within the hour', async t => {
  const { app, mail } = await withMail(t)
  const user = await userWithRoles(app, ['User'])
  const unknown = await forgot(app, 'nobody@example.com')
  t.equal(unknown.statusCode, 202)
  t.same(unknown.json(), (await forgot(app, user.email)).json(), 'the same body')
  const first = tokenOf((await mail.next()).text)
  await app.mail.settled()
  t.equal(mail.unread, 0, 'one mail: the known address\'s, though asked after the unknown one')
  await forgot(app, user.email)
  const second = tokenOf((await mail.next()).text)
  t.not(first, second)
  t.match((await reset(app, first)).json(), { statusCode: 400, code: 'invalid_reset_token' }, 'an earlier token no more')
  await app.knex('password_resets').update({ expires_at: app.knex.raw("now() - interval '1 second'") })
  t.match((await reset(app, second)).json(), { statusCode: 400, code: 'invalid_reset_token' }, 'nor one an hour old')
  t.match((await reset(app, 'x'.repeat(43))).json(), { statusCode: 400, code: 'invalid_reset_token' })
  t.match((await reset(app, 'short')).json(), { statusCode: 400, code: 'invalid_body', param: 'token' })
  await login(app, user.email, PASSWORD)
})

t.test('a token is void once the password changes by other means; a reset ends a change of address waiting', async t => {
  const { app, mail } = await withMail(t)
  const user = await userWithRoles(app, ['User'])
  await forgot(app, user.email)
  const token = tokenOf((await mail.next()).text)
  const profile = await app.inject({ url: '/api/profile', headers: bearer(user.token) })
  const changed = await app.inject({ method: 'PATCH', url: '/api/profile', headers: { ...bearer(user.token), 'if-match': profile.headers.etag as string }, payload: { password: 'changed by the user', c_password: 'changed by the user', current_password: PASSWORD } })
  t.equal(changed.statusCode, 200)
  t.match((await reset(app, token)).json(), { statusCode: 400, code: 'invalid_reset_token' }, 'the token asked before the change')

  // An intruder who knew the password asks for an address of theirs; the owner resets.
  const session = await login(app, user.email, 'changed by the user')
  const etag = (await app.inject({ url: '/api/profile', headers: bearer(session) })).headers.etag as string
  await app.inject({ method: 'PATCH', url: '/api/profile', headers: { ...bearer(session), 'if-match': etag }, payload: { email: 'intruder@example.com', current_password: 'changed by the user' } })
  const intruders = /verify-email\?token=([\w-]+)/.exec((await mail.next()).text ?? '')![1]!
  await forgot(app, user.email)
  t.equal((await reset(app, tokenOf((await mail.next()).text))).statusCode, 200)
  const verified = await app.inject({ method: 'POST', url: '/api/email/verify', payload: { token: intruders } })
  t.match(verified.json(), { statusCode: 400, code: 'invalid_verification_token' }, 'the intruder\'s link no more')
  const owner = await login(app, user.email, NEW_PASSWORD)
  t.match((await app.inject({ url: '/api/profile', headers: bearer(owner) })).json(), { data: { email: user.email, pending_email: null } })
})

t.test('two resets with one token at once: one sets its password', async t => {
  const { app, mail } = await withMail(t)
  const user = await userWithRoles(app, ['User'])
  await forgot(app, user.email)
  const token = tokenOf((await mail.next()).text)
  // Both past the token's first read before either spends it, however slow the machine: each
  // waits for the user's row, held here, once its token was found usable.
  const holder = await app.knex.transaction()
  t.teardown(() => holder.isCompleted() ? undefined : holder.rollback())
  await holder('users').where({ id: user.id }).forNoKeyUpdate().select('id')
  const both = Promise.all([reset(app, token, 'the first password'), reset(app, token, 'the second password')])
  t.ok(await lockWaiters(app, 2), 'both wait for the user\'s row')
  await holder.commit()
  const answers = await both
  t.same(answers.map(res => res.statusCode).sort(), [200, 400])
  t.match(answers.find(res => res.statusCode === 400)?.json(), { code: 'invalid_reset_token' })
  const winner = answers[0]!.statusCode === 200 ? 'the first password' : 'the second password'
  await login(app, user.email, winner)
})

t.test('a deleted user\'s token does not work', async t => {
  const { app, mail } = await withMail(t)
  const user = await userWithRoles(app, ['User'])
  await forgot(app, user.email)
  const token = tokenOf((await mail.next()).text)
  await app.knex('users').where({ id: user.id }).update({ deleted_at: app.knex.fn.now() })
  t.match((await reset(app, token)).json(), { statusCode: 400, code: 'invalid_reset_token' })
})

t.test('without SMTP_URL the routes that send mail answer 503 mail_unavailable', async t => {
  const app = await build(t)
  const res = await forgot(app, 'ada@example.com')
  t.equal(res.statusCode, 503)
  t.match((await reset(app, 'a'.repeat(43))).json(), { statusCode: 503, code: 'mail_unavailable' }, 'nor a reset')
  t.match(res.json(), { success: false, statusCode: 503, code: 'mail_unavailable' })
  t.match(res.headers, { 'retry-after': /^\d+$/ })
})

t.test('asking too often for one address is refused, 429', async t => {
  const { app } = await withMail(t)
  const answers = []
  for (let i = 0; i < 12; i++) answers.push((await forgot(app, 'someone@example.com')).statusCode)
  t.same(answers.slice(-2), [429, 429], 'the e-mail address\'s count, as logins have it (10 a window)')
})

t.test('an SMTP server out of reach: the same answer, the failure only logged', async t => {
  const app = await build(t, config => { config.mail = { smtpUrl: 'smtp://127.0.0.1:1', from: 'records@example.com', publicUrl: PUBLIC_URL } })
  const user = await userWithRoles(app, ['User'])
  t.equal((await forgot(app, user.email)).statusCode, 202)
  t.ok(await within(3_000, async () => (await app.knex('password_resets').where({ user_id: user.id })).length === 1), 'the token was made; its mail failed (logged), and the request was answered all the same')
})
