import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, lockWaiters } from '../../helper.js'
import { buildWithMail, PUBLIC_URL, recipients } from '../../mail-server.js'
import { bearer, login, PASSWORD, userWithRoles } from './accounts.js'
import { loadConfig } from '../../../lib/process/config.js'

const verify = (app: FastifyInstance, token: string) => app.inject({ method: 'POST', url: '/api/email/verify', payload: { token } })
const resend = (app: FastifyInstance, email: string) => app.inject({ method: 'POST', url: '/api/email/resend', payload: { email } })
const register = (app: FastifyInstance, email: string) =>
  app.inject({ method: 'POST', url: '/api/register', payload: { name: 'Ada', email, password: PASSWORD, c_password: PASSWORD } })
/** The token of a verification mail's link. */
const tokenOf = (text: string | undefined) => /verify-email\?token=([A-Za-z0-9_-]{43})/.exec(text ?? '')?.[1] ?? ''
const profileOf = async (app: FastifyInstance, token: string) => {
  const res = await app.inject({ url: '/api/profile', headers: bearer(token) })
  return { etag: res.headers.etag as string, data: res.json<{ data: { id: number, email: string, pending_email: string | null, email_verified_at: string | null } }>().data }
}
/** PATCH /api/profile of `token`'s user to `email`, with their password and the profile's ETag. */
const changeAddress = async (app: FastifyInstance, token: string, email: string) =>
  app.inject({ method: 'PATCH', url: '/api/profile', headers: { ...bearer(token), 'if-match': (await profileOf(app, token)).etag }, payload: { email, current_password: PASSWORD } })

t.test('register mails a link that verifies the address, once; audited without the token', async t => {
  const { app, mail } = await buildWithMail(t)
  const registered = await register(app, 'Ada@Example.com')
  t.equal(registered.statusCode, 201)
  const session = registered.json<{ data: string }>().data
  t.match((await profileOf(app, session)).data, { email: 'Ada@Example.com', email_verified_at: null, pending_email: null })

  const message = await mail.next()
  t.equal(message.subject, 'Verify your e-mail address')
  t.same(recipients(message), ['Ada@example.com'], 'to the address as registered (the parser writes its domain in lower case)')
  const token = tokenOf(message.text)
  t.equal(token.length, 43, 'the plain text holds the link')
  t.ok(String(message.html).includes(`href="${PUBLIC_URL}/verify-email?token=${token}"`), 'the HTML too, from PUBLIC_URL')
  t.ok(message.text!.includes('24 hours'))

  const verified = await verify(app, token)
  t.same(verified.json(), { success: true, message: 'The e-mail address is verified' })
  const after = (await profileOf(app, session)).data
  t.ok(after.email_verified_at !== null && Date.now() - Date.parse(after.email_verified_at) < 60_000, 'verified now')
  t.match((await verify(app, token)).json(), { statusCode: 400, code: 'invalid_verification_token' }, 'a token works once')
  t.match((await verify(app, 'x'.repeat(43))).json(), { statusCode: 400, code: 'invalid_verification_token' })
  t.match((await verify(app, 'short')).json(), { statusCode: 400, code: 'invalid_body', param: 'token' })

  const admin = await userWithRoles(app, ['Admin'])
  const audit = (await app.inject({ url: '/api/audit?action[eq]=verify-email', headers: bearer(admin.token) })).json<{ data: Array<Record<string, unknown>> }>().data
  t.match(audit, [{ action: 'verify-email', resource: 'user', actor_id: audit[0]?.resource_id, before: { email_verified_at: null }, after: { email_verified_at: after.email_verified_at } }])
  t.notOk(JSON.stringify(audit).includes(token), 'no entry holds the token')
  await app.mail.settled()
  t.equal(mail.unread, 0)
})

t.test('a new address waits for its verification before it replaces the old one', async t => {
  const { app, mail } = await buildWithMail(t)
  const user = await userWithRoles(app, ['User'])
  const other = await userWithRoles(app, ['User'])
  t.match((await changeAddress(app, user.token, other.email.toUpperCase())).json(), { statusCode: 409, code: 'email_taken' }, 'an address another user has: refused at once')

  const changed = await changeAddress(app, user.token, 'new@example.com')
  t.equal(changed.statusCode, 200)
  t.match(changed.json(), { data: { email: user.email, pending_email: 'new@example.com' }, message: /once the link mailed to it is followed/ })
  const message = await mail.next()
  t.same(recipients(message), ['new@example.com'], 'the mail goes to the new address')
  t.match(message.text, /change the e-mail address of an account to this one/)
  await login(app, user.email)
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'new@example.com', password: PASSWORD } })).statusCode, 401, 'the new address logs in only once verified')

  t.equal((await resend(app, user.email)).statusCode, 202)
  const again = await mail.next()
  t.same(recipients(again), ['new@example.com'], 'asked again by the address the user has: to the address waiting')
  t.match((await verify(app, tokenOf(message.text))).json(), { statusCode: 400, code: 'invalid_verification_token' }, 'the first link replaced')
  t.equal((await verify(app, tokenOf(again.text))).statusCode, 200)
  t.match((await profileOf(app, user.token)).data, { email: 'new@example.com', pending_email: null, email_verified_at: /^\d{4}-/ })
  const admin = await userWithRoles(app, ['Admin'])
  const events = (await app.inject({ url: '/api/events?type[eq]=user.updated', headers: bearer(admin.token) })).json<{ data: Array<{ resource_id: number, data: object, changed: string[] }> }>().data
  t.match(events.at(-1), { resource_id: user.id, data: { email: 'new@example.com' }, changed: ['email', 'email_verified_at', 'pending_email'] }, 'in the change feed, as the user\'s update')
  await login(app, 'new@example.com')
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: user.email, password: PASSWORD } })).statusCode, 401, 'the old address no more')
})

t.test('two users waiting for one address: the first to verify it has it, the other gets 409', async t => {
  const { app, mail } = await buildWithMail(t)
  const first = await userWithRoles(app, ['User'])
  const second = await userWithRoles(app, ['User'])
  await changeAddress(app, first.token, 'shared@example.com')
  const firstToken = tokenOf((await mail.next()).text)
  await changeAddress(app, second.token, 'Shared@example.com')
  const secondToken = tokenOf((await mail.next()).text)
  t.equal((await verify(app, secondToken)).statusCode, 200)
  t.match((await verify(app, firstToken)).json(), { statusCode: 409, code: 'email_taken' })
  t.match((await profileOf(app, first.token)).data, { email: first.email, pending_email: 'shared@example.com' }, 'nothing changed')

  await app.knex('users').where({ id: first.id }).update({ email_verified_at: null })
  t.equal((await resend(app, first.email)).statusCode, 202)
  t.same(recipients(await mail.next()), [first.email], 'asked again: not to the address another user has since, to the user\'s own still unverified')
  await app.knex('users').where({ id: first.id }).update({ email_verified_at: app.knex.fn.now() })
  t.equal((await resend(app, first.email)).statusCode, 202)
  await app.mail.settled()
  t.equal(mail.unread, 0, 'nothing to verify then: no mail')
})

t.test('two verifications with one token at once: one counts, the other is refused', async t => {
  const { app, mail } = await buildWithMail(t)
  await register(app, 'twice@example.com')
  const { id } = await app.knex('users').where({ email: 'twice@example.com' }).first('id')
  const token = tokenOf((await mail.next()).text)
  // The user's row held: both find the token before either takes the lock.
  const holder = await app.knex.transaction()
  await holder('users').where({ id }).forNoKeyUpdate().select('id')
  const both = Promise.all([verify(app, token), verify(app, token)])
  t.ok(await lockWaiters(app, 2), 'both wait for the user\'s row')
  await holder.commit()
  const answers = await both
  t.same(answers.map(res => res.statusCode).sort(), [200, 400])
  const admin = await userWithRoles(app, ['Admin'])
  t.equal((await app.inject({ url: '/api/audit?action[eq]=verify-email', headers: bearer(admin.token) })).json<{ data: unknown[] }>().data.length, 1, 'audited once')
})

t.test('a newer change, or the old address sent again, leaves an earlier link nothing to prove', async t => {
  const { app, mail } = await buildWithMail(t)
  const user = await userWithRoles(app, ['User'])
  await changeAddress(app, user.token, 'one@example.com')
  const one = tokenOf((await mail.next()).text)
  await changeAddress(app, user.token, 'two@example.com')
  const two = tokenOf((await mail.next()).text)
  t.match((await verify(app, one)).json(), { statusCode: 400, code: 'invalid_verification_token' }, 'only the latest token works')
  const back = await changeAddress(app, user.token, user.email)
  t.match(back.json(), { data: { email: user.email, pending_email: null }, message: 'Profile updated' }, 'the address it has: the change waiting ends')
  t.match((await verify(app, two)).json(), { statusCode: 400, code: 'invalid_verification_token' })
  await app.mail.settled()
  t.equal(mail.unread, 0)
})

t.test('a user-edit holder changing a user\'s address: it waits for the user\'s verification too', async t => {
  const { app, mail } = await buildWithMail(t)
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, ['User'])
  const shown = await app.inject({ url: `/api/users/${user.id}`, headers: bearer(admin.token) })
  const changed = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: { ...bearer(admin.token), 'if-match': shown.headers.etag as string }, payload: { email: 'moved@example.com' } })
  t.match(changed.json(), { data: { email: user.email, pending_email: 'moved@example.com', email_verified_at: null } })
  t.same(recipients(await mail.next()), ['moved@example.com'])

  const made = await app.inject({ method: 'POST', url: '/api/users', headers: bearer(admin.token), payload: { name: 'Made', email: 'made@example.com', password: PASSWORD, c_password: PASSWORD } })
  t.match(made.json(), { data: { email: 'made@example.com', email_verified_at: null } })
  t.same(recipients(await mail.next()), ['made@example.com'], 'a user made is mailed a link too')
})

t.test('REQUIRE_VERIFIED_EMAIL: register starts no session, login waits for the verification', async t => {
  const { app, mail } = await buildWithMail(t, config => { config.auth.requireVerifiedEmail = true })
  const registered = await register(app, 'grace@example.com')
  t.equal(registered.statusCode, 201)
  t.same(registered.json(), { success: true, message: 'Registered: follow the link mailed to the address to verify it, then log in' })
  t.match(registered.headers, { location: /^\/api\/users\/\d+$/ })
  const first = tokenOf((await mail.next()).text)

  const refused = await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'grace@example.com', password: PASSWORD } })
  t.match(refused.json(), { statusCode: 403, code: 'email_unverified' })
  t.match((await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'grace@example.com', password: 'not the password' } })).json(), { statusCode: 401, code: 'invalid_credentials' }, 'a wrong password learns nothing of the address')

  const asked = await resend(app, 'GRACE@example.com')
  t.equal(asked.statusCode, 202)
  t.same(asked.json(), (await resend(app, 'nobody@example.com')).json(), 'the same answer for an address nobody has')
  const second = tokenOf((await mail.next()).text)
  t.not(second, first)
  t.match((await verify(app, first)).json(), { statusCode: 400, code: 'invalid_verification_token' }, 'the mail asked again replaced the first token')
  t.equal((await verify(app, second)).statusCode, 200)
  await login(app, 'grace@example.com')
  await resend(app, 'grace@example.com')
  await app.mail.settled()
  t.equal(mail.unread, 0, 'nothing to verify, no mail: nor for the address nobody has')
})

t.test('an expired token, and a password reset, which proves the address too', async t => {
  const { app, mail } = await buildWithMail(t)
  await register(app, 'late@example.com')
  const token = tokenOf((await mail.next()).text)
  await app.knex('email_verifications').update({ expires_at: app.knex.raw("now() - interval '1 second'") })
  t.match((await verify(app, token)).json(), { statusCode: 400, code: 'invalid_verification_token' }, 'a day old: expired')

  await app.inject({ method: 'POST', url: '/api/password/forgot', payload: { email: 'late@example.com' } })
  const reset = /reset-password\?token=([A-Za-z0-9_-]{43})/.exec((await mail.next()).text ?? '')![1]!
  await app.inject({ method: 'POST', url: '/api/password/reset', payload: { token: reset, password: 'a new password', c_password: 'a new password' } })
  const session = await login(app, 'late@example.com', 'a new password')
  const { data: user } = await profileOf(app, session)
  t.match(user, { email_verified_at: /^\d{4}-/ })
  const admin = await userWithRoles(app, ['Admin'])
  const [entry] = (await app.inject({ url: `/api/audit?action[eq]=reset-password&resource_id[eq]=${user.id}`, headers: bearer(admin.token) })).json<{ data: object[] }>().data
  t.match(entry, { before: { email_verified_at: null, password: '[redacted]' }, after: { email_verified_at: user.email_verified_at, password: '[redacted]' } }, 'the reset audited with the address it proved')
  const events = (await app.inject({ url: '/api/events?type[eq]=user.updated', headers: bearer(admin.token) })).json<{ data: Array<{ resource_id: number, changed: string[] }> }>().data
  t.match(events.filter(event => event.resource_id === user.id), [{ changed: ['email_verified_at'] }], 'and in the change feed, as any change of a user')
})

t.test('without SMTP_URL: an address changes at once, unverified; asking for a mail is 503', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, ['User'])
  await app.knex('users').where({ id: user.id }).update({ email_verified_at: app.knex.fn.now() })
  t.match((await changeAddress(app, user.token, user.email.toUpperCase())).json(), { data: { email: user.email.toUpperCase(), email_verified_at: /^\d{4}-/ } }, 'the same address in another spelling stays verified')
  t.match((await changeAddress(app, user.token, 'direct@example.com')).json(), { data: { email: 'direct@example.com', pending_email: null, email_verified_at: null }, message: 'Profile updated' })
  t.match((await resend(app, 'direct@example.com')).json(), { statusCode: 503, code: 'mail_unavailable' })
  t.throws(() => loadConfig({ DB_HOST: '127.0.0.1', JWT_SECRET: 'x'.repeat(32), REQUIRE_VERIFIED_EMAIL: 'true' }), /REQUIRE_VERIFIED_EMAIL=true needs SMTP_URL/)
})
