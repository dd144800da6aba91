import { createHmac, randomUUID } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { generateSync } from 'otplib'
import pg from 'pg'
import { ERROR_CODE_NAMES, ERROR_CODES, type ErrorCode } from '../../../lib/http/error-codes.js'
import { AUDIENCE, ISSUER } from '../../../plugins/app/auth.js'
import { build, TEST_JWT_SECRET } from '../../helper.js'
import { bearer, PASSWORD, userWithRoles } from '../../routes/api/accounts.js'
import { ada } from '../../routes/students/fixtures.js'

// Routes of the error tests only: writes a foreign key refuses, a read of a missing file.
const FAULT_ROUTES = path.join(import.meta.dirname, 'errors-routes')

/** Every code these tests saw answered, to hold against the declaration at the end. */
const seen = new Set<string>()

/** Checks the answer's `code`, and that its status is the one declared for it; its body. */
interface Answer { statusCode: number, body: string }

function expectCode (t: Test, res: Answer, code: ErrorCode, label: string) {
  const body = JSON.parse(res.body)
  t.equal(body.code, code, `${label}: ${res.body.slice(0, 200)}`)
  t.equal(res.statusCode, ERROR_CODES[code].status, `${label}: the status declared for ${code}`)
  t.equal(body.statusCode, res.statusCode, `${label}: statusCode as sent`)
  if (!('data' in body)) t.notOk('param' in body, `${label}: param only with data`)
  seen.add(body.code)
  return body
}

/** An HS256 token signed with the test secret, whatever its claims. */
function sign (payload: object) {
  const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const body = `${b64({ alg: 'HS256', typ: 'JWT' })}.${b64(payload)}`
  return `${body}.${createHmac('sha256', TEST_JWT_SECRET).update(body).digest('base64url')}`
}

/** Sends raw bytes to the app's port; the answer's status and body, once the server closes or `after` elapses. */
function raw (app: FastifyInstance, first: string, after?: { ms: number }): Promise<Answer> {
  const { port } = app.server.address() as net.AddressInfo
  return new Promise(resolve => {
    let text = ''
    const socket = net.connect(port, '127.0.0.1', () => socket.write(first))
    socket.on('data', chunk => { text += chunk })
    // A server that answers before it read the whole request may reset the connection.
    socket.on('error', () => {})
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n')
      resolve({ statusCode: Number(head.split(' ')[1]), body })
    })
    if (after) setTimeout(() => socket.destroy(), after.ms).unref()
  })
}

t.test('every answer of an error carries the code declared for its case', async t => {
  const app = await build(t, {}, { routes: FAULT_ROUTES })
  const admin = await userWithRoles(app, ['Admin'])
  const nobody = await userWithRoles(app, [])
  const json = { 'content-type': 'application/json' }
  const check = (res: Answer, code: ErrorCode, label: string) => expectCode(t, res, code, label)

  // 400: what a client sent wrong, and where.
  const body = check(await app.inject({ method: 'POST', url: '/students', payload: { ...ada, email: 'nope' } }), 'invalid_body', 'a body field')
  t.equal(body.param, 'email', 'param names the field')
  t.same(Object.keys(body.data), ['email'])
  const query = check(await app.inject({ url: '/students?age[gte]=old' }), 'invalid_parameter', 'a query parameter')
  t.equal(query.param, 'age[gte]', 'param names the parameter as sent')
  t.equal(check(await app.inject({ url: '/students/0' }), 'invalid_parameter', 'a path parameter').param, 'id')
  const created = await app.inject({ method: 'POST', url: '/students', payload: ada })
  t.equal(created.statusCode, 201)
  const id = created.json().id as number
  t.equal(check(await app.inject({ method: 'PATCH', url: `/students/${id}`, headers: { 'if-match': 'not a tag' }, payload: { age: 40 } }), 'invalid_parameter', 'a header').param, 'if-match')
  t.equal(check(await app.inject({ method: 'POST', url: '/api/register', payload: { name: 'Eve', email: 'eve@example.com', password: PASSWORD, c_password: `${PASSWORD}!` } }), 'invalid_body', 'a rule the schema cannot check').param, 'c_password')
  check(await app.inject({ method: 'POST', url: '/students', headers: json, payload: '{"name":' }), 'malformed_json', 'JSON cut short')
  check(await app.inject({ method: 'POST', url: '/students', headers: json, payload: '' }), 'malformed_json', 'an empty JSON body')
  check(await app.inject({ method: 'POST', url: '/students', headers: json, payload: JSON.stringify({ name: 'x'.repeat(40_000) }) }), 'payload_too_large', 'a body over the limit')
  check(await app.inject({ method: 'POST', url: '/students', headers: { 'content-type': 'text/plain' }, payload: 'Ada' }), 'unsupported_media_type', 'a body that is not JSON')

  // 401 and 403: who the caller is, and what they may do.
  check(await app.inject({ url: '/api/clients' }), 'unauthenticated', 'no token')
  check(await app.inject({ url: '/api/clients', headers: bearer('a.b.c') }), 'invalid_token', 'a token that is none of ours')
  const now = Math.floor(Date.now() / 1000)
  const expired = sign({ sub: String(admin.id), jti: randomUUID(), gen: 0, iat: now - 7200, exp: now - 3600, iss: ISSUER, aud: AUDIENCE })
  check(await app.inject({ url: '/api/clients', headers: bearer(expired) }), 'token_expired', 'an expired token of ours')
  check(await app.inject({ method: 'POST', url: '/api/login', payload: { email: admin.email, password: 'not the password' } }), 'invalid_credentials', 'a wrong password')
  check(await app.inject({ method: 'POST', url: '/api/token/refresh', payload: { refresh_token: 'a'.repeat(43) } }), 'invalid_refresh_token', 'an unknown refresh token')
  check(await app.inject({ method: 'POST', url: '/api/password/forgot', payload: { email: admin.email } }), 'mail_unavailable', 'a password reset without SMTP_URL')
  check(await app.inject({ method: 'POST', url: '/api/email/verify', payload: { token: 'a'.repeat(43) } }), 'invalid_verification_token', 'an unknown verification token')
  // REQUIRE_VERIFIED_EMAIL, read at each login, for one: the test's users have no verified address.
  app.config.auth.requireVerifiedEmail = true
  check(await app.inject({ method: 'POST', url: '/api/login', payload: { email: admin.email, password: PASSWORD } }), 'email_unverified', 'a login before the address is verified')
  app.config.auth.requireVerifiedEmail = false
  // Second factors: none to turn off; one enrolled, a login waiting for its code.
  const mfa = (method: 'POST' | 'DELETE', url: string, payload: object) => app.inject({ method, url, headers: bearer(nobody.token), payload })
  check(await mfa('DELETE', '/api/profile/mfa/totp', { current_password: PASSWORD }), 'mfa_not_enrolled', 'no authenticator app to turn off')
  const { secret } = (await mfa('POST', '/api/profile/mfa/totp', { current_password: PASSWORD })).json().data
  t.equal((await mfa('POST', '/api/profile/mfa/totp/confirm', { code: generateSync({ secret }) })).statusCode, 200)
  check(await mfa('POST', '/api/profile/mfa/totp', { current_password: PASSWORD }), 'mfa_enrolled', 'an authenticator app enrolled again')
  const { mfa_token: mfaToken } = (await app.inject({ method: 'POST', url: '/api/login', payload: { email: nobody.email, password: PASSWORD } })).json()
  check(await app.inject({ method: 'POST', url: '/api/login/mfa', payload: { mfa_token: mfaToken, recovery_code: 'aaaaa-aaaaa' } }), 'invalid_mfa_code', 'a wrong recovery code')
  check(await app.inject({ method: 'POST', url: '/api/login/mfa', payload: { mfa_token: 'a'.repeat(43), code: '123456' } }), 'invalid_mfa_token', 'a login\'s second step never begun')
  // Passkeys: a ceremony never begun; a passkey never registered.
  const signed = { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'AA', authenticatorData: 'AA', signature: 'AA' }, clientExtensionResults: {} }
  check(await app.inject({ method: 'POST', url: '/api/login/passkey', payload: { passkey_token: 'a'.repeat(43), credential: signed } }), 'invalid_passkey_token', 'a passkey login never begun')
  const { passkey_token: passkeyToken } = (await app.inject({ method: 'POST', url: '/api/login/passkey/options' })).json()
  check(await app.inject({ method: 'POST', url: '/api/login/passkey', payload: { passkey_token: passkeyToken, credential: signed } }), 'invalid_passkey', 'a passkey not registered')
  check(await app.inject({ url: '/api/clients', headers: bearer(nobody.token) }), 'permission_denied', 'a permission the caller lacks')
  const strict = await build(t, config => { config.auth.mfaRequiredRoles = ['Admin'] })
  const unenrolled = await userWithRoles(strict, ['Admin'])
  check(await strict.inject({ url: '/api/clients', headers: bearer(unenrolled.token) }), 'mfa_enrolment_required', 'an Admin without a second factor, where the role requires one')
  const key = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(admin.token), payload: { name: 'k', permissions: [], current_password: PASSWORD } })
  t.equal(key.statusCode, 201, key.body)
  check(await app.inject({ url: '/api/keys', headers: bearer(key.json().secret) }), 'access_token_required', 'an API key managing keys')

  // 404 and 405: what is not there.
  check(await app.inject({ url: '/students/999999' }), 'not_found', 'a record')
  check(await app.inject({ url: '/nowhere' }), 'route_not_found', 'a route')
  check(await app.inject({ method: 'DELETE', url: '/students' }), 'method_not_allowed', 'a method the path does not take')

  // 409: what the data refuses.
  check(await app.inject({ method: 'POST', url: '/students', payload: ada }), 'email_taken', 'a student\'s e-mail address')
  const asAdmin = bearer(admin.token)
  check(await app.inject({ method: 'POST', url: '/api/users', headers: asAdmin, payload: { name: 'Twin', email: nobody.email, password: PASSWORD, c_password: PASSWORD } }), 'email_taken', 'a user\'s e-mail address')
  check(await app.inject({ method: 'POST', url: '/api/roles', headers: asAdmin, payload: { name: 'Admin', permission: [] } }), 'name_taken', 'a role\'s name')
  const adminRole = await app.knex('roles').where({ name: 'Admin' }).first('id')
  check(await app.inject({ method: 'PATCH', url: `/api/roles/${adminRole.id}`, headers: asAdmin, payload: { name: 'Boss' } }), 'conflict', 'renaming the Admin role')
  check(await app.inject({ method: 'DELETE', url: `/api/users/${admin.id}`, headers: asAdmin }), 'last_admin', 'the last Admin')
  await app.knex.schema.createTable('fault_parents', table => { table.increments('id') })
  await app.knex.schema.createTable('fault_children', table => {
    table.increments('id')
    table.integer('parent_id').notNullable().references('fault_parents.id')
  })
  await app.knex('fault_parents').insert({ id: 1 })
  await app.knex('fault_children').insert({ parent_id: 1 })
  check(await app.inject({ method: 'DELETE', url: '/faults/parents/1' }), 'referenced', 'a record others refer to')
  check(await app.inject({ method: 'POST', url: '/faults/children', payload: { parent_id: 99 } }), 'missing_reference', 'a reference to nothing')

  // Idempotency keys: one request under way, another request under a used key.
  const holder = new pg.Client(app.config.db!)
  await holder.connect()
  t.teardown(() => holder.end())
  // The lock a create takes on its key while it runs.
  await holder.query('select pg_advisory_lock(hashtextextended($1, 0))', [`user ${admin.id}\nbusy`])
  const underWay = await app.inject({ method: 'POST', url: '/api/roles', headers: { ...asAdmin, 'idempotency-key': 'busy' }, payload: { name: 'Editor', permission: [] } })
  check(underWay, 'idempotency_key_in_progress', 'a key in use')
  t.equal(underWay.headers['retry-after'], '1')
  await holder.query('select pg_advisory_unlock_all()')
  const keyed = { 'idempotency-key': 'once' }
  t.equal((await app.inject({ method: 'POST', url: '/students', headers: keyed, payload: { ...ada, email: 'grace@example.com' } })).statusCode, 201)
  check(await app.inject({ method: 'POST', url: '/students', headers: keyed, payload: { ...ada, email: 'alan@example.com' } }), 'idempotency_key_reused', 'a key with another request')
  check(await app.inject({ method: 'POST', url: '/students/batch', payload: [{ ...ada, email: 'alan@example.com' }, { ...ada, age: -1 }] }), 'invalid_rows', 'an atomic batch with a row refused')

  // Conditional requests, and the server's own failure.
  const stale = await app.inject({ method: 'PATCH', url: `/students/${id}`, headers: { 'if-match': '"1"' }, payload: { age: 40 } })
  check(stale, 'precondition_failed', 'a stale If-Match')
  t.ok(stale.headers.etag, 'with the current tag')
  check(await app.inject({ url: '/faults/file' }), 'internal_error', 'a bug')

  // A cursor of the change feed whose next events were swept.
  await app.knex('swept_positions').where({ source: 'change_outbox' }).update({ through: 1_000_000 })
  check(await app.inject({ url: '/api/events?after=5', headers: asAdmin }), 'cursor_expired', 'events after a swept one')
})

t.test('the codes of settings, of the HTTP parser and of an unreachable database', async t => {
  const app = await build(t, config => {
    config.requireIfMatch = true
    config.corsOrigins = ['https://app.example.com']
    config.auth.rateLimit.notFoundPerIp = 1
    config.timeouts.handler = 500
    config.dbPoolMax = 1
    // Mail on (its server never reached): a reset's token is looked at.
    config.mail = { smtpUrl: 'smtp://127.0.0.1:1', from: 'records@example.com', publicUrl: 'http://localhost' }
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const check = (res: Answer, code: ErrorCode, label: string) => expectCode(t, res, code, label)
  check(await app.inject({ method: 'POST', url: '/api/password/reset', payload: { token: 'a'.repeat(43), password: 'a password', c_password: 'a password' } }), 'invalid_reset_token', 'an unknown password reset token')

  const id = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json().id as number
  check(await app.inject({ method: 'PATCH', url: `/students/${id}`, payload: { age: 40 } }), 'if_match_required', 'an update without If-Match')
  check(await app.inject({ method: 'OPTIONS', url: '/students', headers: { origin: 'https://app.example.com' } }), 'bad_request', 'a CORS preflight without its method')
  t.equal((await app.inject({ url: '/nowhere' })).statusCode, 404)
  check(await app.inject({ url: '/nowhere' }), 'rate_limited', 'unknown routes past the limit')

  check(await raw(app, 'GET /students/% HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'), 'malformed_url', 'a bad percent-encoding')
  check(await raw(app, 'HELLO\r\n\r\n'), 'malformed_request', 'not HTTP')
  check(await raw(app, `GET /students HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`), 'headers_too_large', 'headers over the limit')
  const dripped = raw(app, 'POST /students HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 50\r\n\r\n{"na', { ms: 5_000 })
  check(await dripped, 'request_timeout', 'a body not all received in time')

  // The pool's only connection held: nothing for the request in time.
  const trx = await app.knex.transaction()
  t.teardown(() => trx.rollback())
  const unavailable = await app.inject({ url: '/students' })
  check(unavailable, 'unavailable', 'no database connection in time')
  t.equal(unavailable.headers['retry-after'], '5')
})

t.test('every declared code was answered above, and the OpenAPI document and the README list exactly the declared codes', async t => {
  t.same([...seen].sort(), [...ERROR_CODE_NAMES].sort(), 'each code provoked by a request')
  const document = JSON.parse(await readFile(path.join(import.meta.dirname, '../../../openapi.json'), 'utf8'))
  const { code, param } = document.components.schemas.ErrorBody.properties
  t.same(code.enum, ERROR_CODE_NAMES, 'the committed document\'s enum is the declaration')
  t.ok(document.components.schemas.ErrorBody.required.includes('code'), 'code is required')
  t.notOk(document.components.schemas.ErrorBody.required.includes('param'), 'param is not')
  t.equal(param.type, 'string')
  const readme = await readFile(path.join(import.meta.dirname, '../../../README.md'), 'utf8')
  const table = [...readme.matchAll(/^\| `([a-z_]+)` \| (\d{3}) \| (.+) \|$/gm)].map(([, name, status, meaning]) => [name, Number(status), meaning])
  t.same(table, Object.entries(ERROR_CODES).map(([name, { status, meaning }]) => [name, status, meaning]), 'the README\'s table is the declaration')
  for (const [name, { status }] of Object.entries(ERROR_CODES)) {
    t.match(name, /^[a-z]+(_[a-z]+)*$/, `${name} is snake_case`)
    t.ok(status >= 400 && status < 600, `${name}: an error status`)
  }
})
