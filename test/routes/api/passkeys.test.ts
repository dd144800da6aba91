import { existsSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import { chromium, type Page } from 'playwright-core'
import { build } from '../../helper.js'
import { bearer, PASSWORD, userWithRoles } from './accounts.js'

/** Debian's Chromium (apt-get install chromium); .ci/run installs it. */
const CHROMIUM = '/usr/bin/chromium'
// CI installs it: there, a missing browser fails the test (it cannot start) rather than skip it.
const skip = !existsSync(CHROMIUM) && !process.env.CI && `${CHROMIUM} is missing (apt-get install chromium): passkeys are not tried in a browser`

interface Answer { status: number, body: any }

/**
 * What a front end's page does, in the browser: asks the service for a ceremony's options, hands
 * them to the authenticator, and sends its answer back. `step` is `register` (with the caller's
 * token and password), `login`, or `reauthenticate` (a login's options, the answer sent with the
 * caller's token); the answers of the service, and the browser's credential.
 */
async function ceremony (page: Page, api: string, step: 'register' | 'login' | 'reauthenticate', token = '', password = '', tamper = false): Promise<{ options: Answer, credential: unknown, done: Answer }> {
  return await page.evaluate(async ({ api, step, token, password, tamper }) => {
    // The browser's WebAuthn API (the test compiles without the DOM's types).
    interface Credential { toJSON: () => unknown }
    const { navigator, PublicKeyCredential } = globalThis as unknown as {
      navigator: { credentials: { create: (options: object) => Promise<Credential>, get: (options: object) => Promise<Credential> } }
      PublicKeyCredential: { parseCreationOptionsFromJSON: (json: unknown) => object, parseRequestOptionsFromJSON: (json: unknown) => object }
    }
    const post = async (path: string, body: unknown, auth?: string): Promise<Answer> => {
      const res = await fetch(api + path, { method: 'POST', headers: { 'content-type': 'application/json', ...(auth ? { authorization: `Bearer ${auth}` } : {}) }, body: JSON.stringify(body) })
      return { status: res.status, body: await res.json() }
    }
    if (step === 'register') {
      const options = await post('/api/profile/passkeys/options', { current_password: password }, token)
      const made = await navigator.credentials.create({ publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options.body.data) })
      const credential = made.toJSON()
      return { options, credential, done: await post('/api/profile/passkeys', { passkey_token: options.body.passkey_token, name: 'Laptop', credential }, token) }
    }
    const options = await post('/api/login/passkey/options', {})
    const signed = await navigator.credentials.get({ publicKey: PublicKeyCredential.parseRequestOptionsFromJSON(options.body.data) })
    const credential = signed.toJSON() as { response: { signature: string } }
    // A signature changed on the way: a byte of its middle, where it still parses.
    if (tamper) {
      const { signature } = credential.response
      const middle = Math.floor(signature.length / 2)
      credential.response.signature = signature.slice(0, middle) + (signature[middle] === 'A' ? 'B' : 'A') + signature.slice(middle + 1)
    }
    const done = step === 'login'
      ? await post('/api/login/passkey', { passkey_token: options.body.passkey_token, credential })
      : await post('/api/profile/reauthenticate', { passkey_token: options.body.passkey_token, credential }, token)
    return { options, credential, done }
  }, { api, step, token, password, tamper })
}

/**
 * A front end's page on an origin of its own, open in Chromium with the DevTools protocol's
 * virtual authenticator (a platform one that keeps passkeys and verifies its user), and the
 * service told `siteOrigins` are the site's pages (CORS lets the page call it): the page, and
 * the service's app and address.
 */
async function frontEnd (t: Test, siteOrigins: (origin: string) => string[]) {
  const pages = http.createServer((_, res) => { res.setHeader('content-type', 'text/html'); res.end('<!doctype html><title>Front end</title>') })
  await new Promise<void>(resolve => pages.listen(0, '127.0.0.1', resolve))
  t.teardown(() => pages.close())
  const origin = `http://localhost:${(pages.address() as AddressInfo).port}`
  const app = await build(t, config => {
    config.auth.passkeys = { rpId: 'localhost', origins: siteOrigins(origin) }
    config.corsOrigins = [origin]
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const api = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  await page.goto(origin)
  const devtools = await page.context().newCDPSession(page)
  await devtools.send('WebAuthn.enable')
  await devtools.send('WebAuthn.addVirtualAuthenticator', { options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true } })
  return { page, app, api }
}

t.test('a passkey registered from a page in a real browser logs its user in, once per ceremony, until it is removed', { skip }, async t => {
  // The front end's page is the site's.
  const { page, app, api } = await frontEnd(t, origin => [origin])

  const user = await userWithRoles(app, [])
  const registered = await ceremony(page, api, 'register', user.token, PASSWORD)
  t.equal(registered.options.status, 200)
  t.match(registered.options.body.data, { rp: { id: 'localhost', name: 'Student Records' }, user: { name: user.email }, authenticatorSelection: { residentKey: 'required', userVerification: 'required' } })
  t.equal(registered.done.status, 201, JSON.stringify(registered.done.body))
  t.match(registered.done.body.data, { id: Number, name: 'Laptop', last_used_at: null })
  const listed = await app.inject({ url: '/api/profile/passkeys', headers: bearer(user.token) })
  t.same(listed.json().data.map((passkey: { name: string }) => passkey.name), ['Laptop'])

  const again = await app.inject({ method: 'POST', url: '/api/profile/passkeys', headers: bearer(user.token), payload: { passkey_token: registered.options.body.passkey_token, name: 'Again', credential: registered.credential } })
  t.equal(again.statusCode, 400, 'a registration\'s options answer once')
  t.equal(again.json().code, 'invalid_passkey_token')

  const login = await ceremony(page, api, 'login')
  t.equal(login.done.status, 200, JSON.stringify(login.done.body))
  t.match(login.done.body, { success: true, data: String, refresh_token: String, token_type: 'Bearer' })
  const profile = await app.inject({ url: '/api/profile', headers: bearer(login.done.body.data) })
  t.equal(profile.json().data.id, user.id, 'the session is the passkey\'s user\'s')

  const replayed = await app.inject({ method: 'POST', url: '/api/login/passkey', payload: { passkey_token: login.options.body.passkey_token, credential: login.credential } })
  t.equal(replayed.statusCode, 400, 'a login\'s answer works once')
  t.equal(replayed.json().code, 'invalid_passkey_token')
  const fresh = (await app.inject({ method: 'POST', url: '/api/login/passkey/options' })).json()
  const otherChallenge = await app.inject({ method: 'POST', url: '/api/login/passkey', payload: { passkey_token: fresh.passkey_token, credential: login.credential } })
  t.equal(otherChallenge.statusCode, 401, 'an answer signs its own challenge only')
  t.equal(otherChallenge.json().code, 'invalid_passkey')

  const tampered = await ceremony(page, api, 'login', '', '', true)
  t.equal(tampered.done.status, 401, 'a signature that does not verify')
  t.equal(tampered.done.body.code, 'invalid_passkey')
  app.config.auth.requireVerifiedEmail = true
  const unverified = await ceremony(page, api, 'login')
  t.equal(unverified.done.status, 403, 'REQUIRE_VERIFIED_EMAIL holds for passkeys too')
  t.equal(unverified.done.body.code, 'email_unverified')
  app.config.auth.requireVerifiedEmail = false

  const entries = await app.knex('audit_log').whereIn('action', ['passkey-add', 'login', 'login-failed']).orderBy('id').select('action', 'after')
  t.match(entries.slice(-4), [{ action: 'passkey-add', after: { user_id: user.id, name: 'Laptop' } }, { action: 'login', after: { user_id: user.id, factor: 'passkey' } },
    { action: 'login-failed', after: { user_id: user.id, factor: 'passkey' } }, { action: 'login-failed', after: { user_id: user.id, factor: 'passkey' } }])

  const passkeyId = registered.done.body.data.id
  const remove = (token: string, payload?: object) => app.inject({ method: 'DELETE', url: `/api/profile/passkeys/${passkeyId}`, headers: bearer(token), ...(payload === undefined ? {} : { payload }) })
  t.equal((await remove(user.token)).statusCode, 400, 'without the password, asked for it')
  // Step-up: the passkey proves its holder again, in a session of theirs only.
  const other = await userWithRoles(app, [])
  const notTheirsStepUp = await ceremony(page, api, 'reauthenticate', other.token)
  t.equal(notTheirsStepUp.done.status, 401, 'another user\'s passkey proves nothing of this one')
  t.equal(notTheirsStepUp.done.body.code, 'invalid_passkey')
  const tamperedStepUp = await ceremony(page, api, 'reauthenticate', user.token, '', true)
  t.equal(tamperedStepUp.done.status, 401, 'a signature that does not verify proves nothing')
  t.equal(tamperedStepUp.done.body.code, 'invalid_passkey')
  const stepUp = await ceremony(page, api, 'reauthenticate', user.token)
  t.equal(stepUp.done.status, 200, JSON.stringify(stepUp.done.body))
  t.ok(Date.parse(stepUp.done.body.data.reauthenticated_until) > Date.now() + 290_000)
  t.match(await app.knex('audit_log').where({ action: 'reauthenticate' }).select('after'), [{ after: { user_id: user.id, factor: 'passkey' } }])

  const wrongPassword = await remove(user.token, { current_password: 'not it' })
  t.equal(wrongPassword.statusCode, 401, 'a password sent is checked all the same')
  const notTheirs = await remove(other.token, { current_password: PASSWORD })
  t.equal(notTheirs.statusCode, 404, 'another user\'s passkey is not found')
  const removed = await remove(user.token)
  t.equal(removed.statusCode, 200, 'removed on the reauthenticated session\'s word, without a body')
  const gone = await ceremony(page, api, 'login')
  t.equal(gone.done.status, 401, 'a passkey removed logs nobody in')
  t.equal(gone.done.body.code, 'invalid_passkey')
})

t.test('an answer from a page of another origin is refused', { skip }, async t => {
  // The site's pages are elsewhere: this page's answers are not the site's.
  const { page, app, api } = await frontEnd(t, () => ['https://localhost'])
  const user = await userWithRoles(app, [])
  const registered = await ceremony(page, api, 'register', user.token, PASSWORD)
  t.equal(registered.done.status, 400)
  t.match(registered.done.body, { code: 'invalid_body', data: { credential: [String] } })
  const retried = await app.inject({ method: 'POST', url: '/api/profile/passkeys', headers: bearer(user.token), payload: { passkey_token: registered.options.body.passkey_token, name: 'Again', credential: registered.credential } })
  t.equal(retried.json().code, 'invalid_passkey_token', 'the refused answer spent its challenge')
  t.equal((await app.knex('passkeys').count<[{ count: string }]>('* as count'))[0].count, '0', 'nothing kept')
})
