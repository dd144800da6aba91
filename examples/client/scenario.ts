// A typed client of the service, generated from openapi.json (see the README), run through
// a whole scenario: `tsx examples/client/scenario.ts http://127.0.0.1:3000`.
import createClient from 'openapi-fetch'
import type { paths } from './api.js'

const baseUrl = process.argv[2] ?? 'http://127.0.0.1:3000'
const api = createClient<paths>({ baseUrl })

function check (condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(message)
  console.log(`ok - ${message}`)
}

// Authentication: register, log in, use the token.
const email = `client-${Date.now()}@example.com`
const password = 'a password for the typed client'
const registered = await api.POST('/api/register', { body: { name: 'Typed Client', email, password, c_password: password } })
check(registered.response.status === 201 && registered.data?.success, 'register')
const login = await api.POST('/api/login', { body: { email, password } })
check(login.data?.data, 'login')

// Sessions: the refresh token gets the next pair; the register's session is listed beside this
// one, and ended.
const refreshed = await api.POST('/api/token/refresh', { body: { refresh_token: login.data.refresh_token } })
check(refreshed.data?.token_type === 'Bearer' && refreshed.data.refresh_token !== login.data.refresh_token, 'refresh')
const auth = { headers: { authorization: `Bearer ${refreshed.data.data}` } }
const sessions = await api.GET('/api/sessions', auth)
const registerSession = sessions.data?.data.find(session => !session.current)
check(sessions.data?.data.length === 2 && registerSession, 'list sessions')
const ended = await api.DELETE('/api/sessions/{id}', { ...auth, params: { path: { id: registerSession.id } } })
const registerToken = { headers: { authorization: `Bearer ${registered.data.data}` } }
check(ended.data?.data.id === registerSession.id && (await api.GET('/api/profile', registerToken)).response.status === 401, 'end the other session')

const profile = await api.GET('/api/profile', auth)
check(profile.data?.data.email === email, 'profile')

// Clients: the registered user holds the User role (REGISTER_ROLES=User). A create sent with
// an Idempotency-Key is safe to retry: the retry gets the first answer, and writes nothing.
const createClientOnce = () => api.POST('/api/clients', {
  ...auth,
  params: { header: { 'idempotency-key': `acme-${email}` } },
  body: { name: 'Acme', vat_number: '1234567890', street: 'Prosta 1', city: 'Warszawa', post_code: '00-850', email: 'office@acme.example' }
})
const created = await createClientOnce()
check(created.response.status === 201 && created.data, 'create a client')
const id = created.data.data.id
const retried = await createClientOnce()
check(retried.response.headers.get('idempotent-replayed') === 'true' && retried.data?.data.id === id, 'a retry of the create gets the same client')
const list = await api.GET('/api/clients', { ...auth, params: { query: { limit: 10 } } })
check(list.data?.data.some(client => client.id === id), 'list clients')

// API keys: a key for a machine client that only lists clients; shown once, used, revoked.
const made = await api.POST('/api/keys', { ...auth, body: { name: 'nightly export', permissions: ['client-list'], current_password: password } })
const key = made.data
check(made.response.status === 201 && key !== undefined && key.secret.startsWith('sk_'), 'make an API key')
const byKey = { headers: { authorization: `Bearer ${key.secret}` } }
const listedByKey = await api.GET('/api/clients/{id}', { ...byKey, params: { path: { id } } })
const refusedByKey = await api.DELETE('/api/clients/{id}', { ...byKey, params: { path: { id } } })
check(listedByKey.data?.data.id === id && refusedByKey.response.status === 403, 'the key reads clients, and may not delete one')
const revoked = await api.DELETE('/api/keys/{id}', { ...auth, params: { path: { id: key.data.id } } })
check(revoked.data?.data.id === key.data.id && (await api.GET('/api/clients', byKey)).response.status === 401, 'revoke the key')
// An update with If-Match: it writes only over the version it was read at.
const etag = created.response.headers.get('etag')!
const patched = await api.PATCH('/api/clients/{id}', { ...auth, params: { path: { id }, header: { 'if-match': etag } }, body: { city: 'Kraków' } })
check(patched.data?.data.city === 'Kraków', 'update a client with PATCH and If-Match')
const stale = await api.PATCH('/api/clients/{id}', { ...auth, params: { path: { id }, header: { 'if-match': etag } }, body: { city: 'Gdańsk' } })
check(stale.response.status === 412 && stale.response.headers.get('etag') === patched.response.headers.get('etag'), 'a stale If-Match gets 412 and the current tag')
const deleted = await api.DELETE('/api/clients/{id}', { ...auth, params: { path: { id } } })
check(deleted.data?.data.id === id, 'delete a client')
const gone = await api.GET('/api/clients/{id}', { ...auth, params: { path: { id } } })
check(gone.response.status === 404 && gone.error?.message === `Client ${id} not found`, 'the deleted client is gone')

const out = await api.GET('/api/logout', auth)
check(out.response.status === 200, 'logout')
const after = await api.GET('/api/profile', auth)
check(after.response.status === 401 && after.error?.success === false, 'the token no longer works')

// Students, through both variants.
const student = await api.POST('/api/v1/students', {
  body: { name: 'Ada', email: `ada-${Date.now()}@example.com`, age: 36, dob: '1815-12-10' }
})
check(student.response.status === 201 && student.data, 'create a student (v1)')
const sid = student.data.id
const read = await api.GET('/students/{id}', { params: { path: { id: sid } } })
check(read.data?.dob === '1815-12-10', 'read it through /students')
const renamed = await api.PUT('/api/v1/students/{id}', { params: { path: { id: sid } }, body: { name: 'Ada King' } })
check(renamed.data?.name === 'Ada King', 'rename it (v1 PUT)')
const changed = await api.PATCH('/students/{id}', { params: { path: { id: sid } }, body: { age: 37 } })
check(changed.data?.age === 37, 'change its age (PATCH /students)')
// A filtered, sorted, counted list: the filters typed per field and operator, sent as
// `age[gte]=36&name[starts_with]=ada&sort=-dob&sort=name&count=exact`.
const filtered = await api.GET('/students', {
  params: { query: { age: { gte: 36, lte: 40 }, name: { starts_with: 'ada' }, id: { in: String(sid) }, sort: ['-dob', 'name'], count: 'exact', limit: 10 } }
})
check(filtered.data?.length === 1 && filtered.data[0]!.id === sid, 'a filtered, sorted list finds it')
check(filtered.response.headers.get('x-total-count') === '1', 'and counts it')
const removed = await api.DELETE('/students/{id}', { params: { path: { id: sid } } })
check(removed.response.status === 204, 'delete it')
const missing = await api.GET('/api/v1/students/{id}', { params: { path: { id: sid } } })
check(missing.response.status === 404, 'it is gone from v1 too')
