// A typed client of the service, generated from openapi.json (see the README), run through a
// whole scenario against the quick start (`npm start`, with its defaults):
//
//   ADMIN_PASSWORD='<the password npm start logged>' npx tsx examples/client/scenario.ts
//
// The user it registers holds no role, so the administrator the quick start made gives them the
// User role (ADMIN_EMAIL, by default admin@example.com, and ADMIN_PASSWORD: the first start logs
// it once; `npm run reset-password -- admin@example.com` makes a new one). A service started with
// REGISTER_ROLES=User gives that role at register: then no password is needed. Another address
// than http://127.0.0.1:3000 is the first argument. For the types:
// `npx openapi-typescript openapi.json -o examples/client/api.d.ts && npx tsc -p examples/client`.
import { generateSync } from 'otplib'
import { bearer, check, fail, serviceAt, type Answer } from './client.js'

const api = serviceAt(process.argv[2] ?? 'http://127.0.0.1:3000')

/**
 * The answer of `ask` once it is no longer a 2xx, asked again for up to 2 s: a session ended or
 * a key revoked is refused at once by the instance that ended it, within a second by any other
 * (README, "Ending sessions"), and behind a balancer the next request may go to another.
 */
async function refusedSoon<A extends Answer> (ask: () => Promise<A>): Promise<A> {
  const deadline = Date.now() + 2_000
  let answer = await ask()
  while (answer.response.ok && Date.now() < deadline) {
    await new Promise(resolve => setTimeout(resolve, 50))
    answer = await ask()
  }
  return answer
}

// Authentication: register, log in, use the token.
const email = `client-${Date.now()}@example.com`
const password = 'a password for the typed client'
const registered = await api.POST('/api/register', { body: { name: 'Typed Client', email, password, c_password: password } })
// A session, unless the service requires a verified address first (REQUIRE_VERIFIED_EMAIL).
check(registered.response.status === 201 && registered.data !== undefined && 'data' in registered.data, 'register', registered)
const login = await api.POST('/api/login', { body: { email, password } })
// A session's tokens; an account with an authenticator app would get an `mfa_token` instead (below).
check(login.data !== undefined && 'data' in login.data, 'login', login)

// Sessions: the refresh token gets the next pair; the register's session is listed beside this
// one, and ended.
const refreshed = await api.POST('/api/token/refresh', { body: { refresh_token: login.data.refresh_token } })
check(refreshed.data?.token_type === 'Bearer' && refreshed.data.refresh_token !== login.data.refresh_token, 'refresh', refreshed)
const auth = bearer(refreshed.data.data)
const sessions = await api.GET('/api/sessions', auth)
const registerSession = sessions.data?.data.find(session => !session.current)
check(sessions.data?.data.length === 2 && registerSession, 'list sessions', sessions)
const ended = await api.DELETE('/api/sessions/{id}', { ...auth, params: { path: { id: registerSession.id } } })
check(ended.data?.data.id === registerSession.id, 'end the other session', ended)
const endedAuth = bearer(registered.data.data)
const endedToken = await refusedSoon(() => api.GET('/api/profile', endedAuth))
check(endedToken.response.status === 401, 'its token is refused', endedToken)

const profile = await api.GET('/api/profile', auth)
check(profile.data?.data.email === email, 'profile', profile)

// Clients need the User role's permissions. A service started with REGISTER_ROLES=User gave
// them at register; otherwise (the quick start) the administrator gives the user that role.
if (!profile.data.data.permissions.includes('client-create')) {
  const adminPassword = process.env.ADMIN_PASSWORD
  if (!adminPassword) {
    fail('the user may manage clients', profile, 'The user holds no role: set ADMIN_PASSWORD to the administrator\'s password (npm start ' +
      'logs it at its first start; npm run reset-password -- admin@example.com makes a new one), or start the service with REGISTER_ROLES=User.')
  }
  const admin = await api.POST('/api/login', { body: { email: process.env.ADMIN_EMAIL ?? 'admin@example.com', password: adminPassword } })
  check(admin.data !== undefined && 'data' in admin.data, 'log in as the administrator', admin)
  const granted = await api.PATCH('/api/users/{id}', { ...bearer(admin.data.data), params: { path: { id: profile.data.data.id } }, body: { roles: ['User'] } })
  check(granted.data?.data.roles.some(role => role.name === 'User'), 'the administrator gives the user the User role', granted)
  const adminOut = await api.GET('/api/logout', bearer(admin.data.data))
  check(adminOut.response.status === 200, 'the administrator logs out', adminOut)
}

// A create sent with an Idempotency-Key is safe to retry: the retry gets the first answer, and
// writes nothing.
const createClientOnce = () => api.POST('/api/clients', {
  ...auth,
  params: { header: { 'idempotency-key': `acme-${email}` } },
  body: { name: 'Acme', vat_number: '1234567890', street: 'Prosta 1', city: 'Warszawa', post_code: '00-850', email: 'office@acme.example' }
})
const created = await createClientOnce()
check(created.response.status === 201 && created.data, 'create a client', created)
const id = created.data.data.id
const retried = await createClientOnce()
check(retried.response.headers.get('idempotent-replayed') === 'true' && retried.data?.data.id === id, 'a retry of the create gets the same client', retried)
const list = await api.GET('/api/clients', { ...auth, params: { query: { limit: 10 } } })
check(list.data?.data.some(client => client.id === id), 'list clients', list)

// A batch: several clients in one request, each row's outcome in the rows' order.
const batch = await api.POST('/api/clients/batch', {
  ...auth,
  params: { query: { mode: 'per_row' } },
  body: [
    { name: 'Beta', vat_number: '1234567891', street: 'Prosta 2', city: 'Kraków', post_code: '30-001', email: 'office@beta.example' },
    { name: 'Gamma', vat_number: 'not digits', street: 'Prosta 3', city: 'Gdańsk', post_code: '80-001', email: 'office@gamma.example' }
  ]
})
check(batch.data?.data.map(outcome => outcome.status).join() === '201,400', 'a batch of clients answers each row', batch)

// API keys: a key for a machine client that only lists clients; shown once, used, revoked.
const made = await api.POST('/api/keys', { ...auth, body: { name: 'nightly export', permissions: ['client-list'], current_password: password } })
const key = made.data
check(made.response.status === 201 && key !== undefined && key.secret.startsWith('sk_'), 'make an API key', made)
const byKey = bearer(key.secret)
const readByKey = await api.GET('/api/clients/{id}', { ...byKey, params: { path: { id } } })
check(readByKey.data?.data.id === id, 'the key reads clients', readByKey)
const refusedByKey = await api.DELETE('/api/clients/{id}', { ...byKey, params: { path: { id } } })
check(refusedByKey.response.status === 403, 'and may not delete one', refusedByKey)
const revoked = await api.DELETE('/api/keys/{id}', { ...auth, params: { path: { id: key.data.id } } })
check(revoked.data?.data.id === key.data.id, 'revoke the key', revoked)
const revokedKey = await refusedSoon(() => api.GET('/api/clients', byKey))
check(revokedKey.response.status === 401, 'the revoked key is refused', revokedKey)
// An update with If-Match: it writes only over the version it was read at.
const etag = created.response.headers.get('etag')!
const patched = await api.PATCH('/api/clients/{id}', { ...auth, params: { path: { id }, header: { 'if-match': etag } }, body: { city: 'Kraków' } })
check(patched.data?.data.city === 'Kraków', 'update a client with PATCH and If-Match', patched)
const stale = await api.PATCH('/api/clients/{id}', { ...auth, params: { path: { id }, header: { 'if-match': etag } }, body: { city: 'Gdańsk' } })
check(stale.response.status === 412 && stale.response.headers.get('etag') === patched.response.headers.get('etag'), 'a stale If-Match gets 412 and the current tag', stale)
const deleted = await api.DELETE('/api/clients/{id}', { ...auth, params: { path: { id } } })
check(deleted.data?.data.id === id, 'delete a client', deleted)
const gone = await api.GET('/api/clients/{id}', { ...auth, params: { path: { id } } })
check(gone.response.status === 404 && gone.error?.message === `Client ${id} not found`, 'the deleted client is gone', gone)

// A second factor: an authenticator app (otplib stands in for the phone), on once its first
// code confirms it; from then on a login answers an `mfa_token` and waits for a code.
const enrolment = await api.POST('/api/profile/mfa/totp', { ...auth, body: { current_password: password } })
check(enrolment.data !== undefined && enrolment.data.data.otpauth_uri.startsWith('otpauth://totp/'), 'start enrolling an authenticator app', enrolment)
const { secret } = enrolment.data.data
const confirmed = await api.POST('/api/profile/mfa/totp/confirm', { ...auth, body: { code: generateSync({ secret }) } })
check(confirmed.data?.data.recovery_codes.length === 10, 'confirm it with its first code: recovery codes, shown once', confirmed)
const halfway = await api.POST('/api/login', { body: { email, password } })
check(halfway.data !== undefined && 'mfa_token' in halfway.data, 'a login now waits for a code', halfway)
// A code works once: the confirmation spent the app's code of now, so the next one (the app's
// 30 s later, taken a step early) completes the login.
const nextCode = generateSync({ secret, epoch: Math.floor(Date.now() / 1000) + 30 })
const secondStep = await api.POST('/api/login/mfa', { body: { mfa_token: halfway.data.mfa_token, code: nextCode } })
check(secondStep.data?.token_type === 'Bearer', 'the code completes the login', secondStep)
// Step-up: the session proves itself again (the password here; the app's code or a passkey do
// too), and for 5 minutes what asks for the password takes its word: an API key without it.
const mfaAuth = bearer(secondStep.data.data)
const stepUp = await api.POST('/api/profile/reauthenticate', { ...mfaAuth, body: { current_password: password } })
check(stepUp.data?.data.reauthenticated_until !== undefined, 'the session reauthenticates', stepUp)
const stepUpKey = await api.POST('/api/keys', { ...mfaAuth, body: { name: 'step-up', permissions: [] } })
check(stepUpKey.response.status === 201, 'and makes an API key without the password', stepUpKey)
const mfaOut = await api.GET('/api/logout', mfaAuth)
check(mfaOut.response.status === 200, 'that session logs out', mfaOut)

const out = await api.GET('/api/logout', auth)
check(out.response.status === 200, 'logout', out)
const after = await refusedSoon(() => api.GET('/api/profile', auth))
check(after.response.status === 401 && after.error?.success === false, 'the token no longer works', after)

// Students, through both variants.
const student = await api.POST('/api/v1/students', {
  body: { name: 'Ada', email: `ada-${Date.now()}@example.com`, age: 36, dob: '1815-12-10' }
})
check(student.response.status === 201 && student.data, 'create a student (v1)', student)
const sid = student.data.id
const read = await api.GET('/students/{id}', { params: { path: { id: sid } } })
check(read.data?.dob === '1815-12-10', 'read it through /students', read)
const renamed = await api.PUT('/api/v1/students/{id}', { params: { path: { id: sid } }, body: { name: 'Ada King' } })
check(renamed.data?.name === 'Ada King', 'rename it (v1 PUT)', renamed)
const changed = await api.PATCH('/students/{id}', { params: { path: { id: sid } }, body: { age: 37 } })
check(changed.data?.age === 37, 'change its age (PATCH /students)', changed)
// A filtered, sorted, counted list: the filters typed per field and operator, sent as
// `age[gte]=36&name[starts_with]=ada&sort=-dob&sort=name&count=exact`.
const filtered = await api.GET('/students', {
  params: { query: { age: { gte: 36, lte: 40 }, name: { starts_with: 'ada' }, id: { in: String(sid) }, sort: ['-dob', 'name'], count: 'exact', limit: 10 } }
})
check(filtered.data?.length === 1 && filtered.data[0]!.id === sid, 'a filtered, sorted list finds it', filtered)
check(filtered.response.headers.get('x-total-count') === '1', 'and counts it', filtered)
const removed = await api.DELETE('/students/{id}', { params: { path: { id: sid } } })
check(removed.response.status === 204, 'delete it', removed)
const missing = await api.GET('/api/v1/students/{id}', { params: { path: { id: sid } } })
check(missing.response.status === 404, 'it is gone from v1 too', missing)
