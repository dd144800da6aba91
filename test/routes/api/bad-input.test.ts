import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../../helper.js'
import { bearer, client, insertClient, rolesOf, userWithRoles } from './accounts.js'

/** A body sent as this very JSON text. */
class JsonText {
  readonly text: string
  constructor (text: string) {
    this.text = text
  }
}

const TABLES = ['clients', 'roles', 'role_permissions', 'users', 'user_roles', 'revoked_tokens']

async function snapshot (app: FastifyInstance) {
  return Promise.all(TABLES.map(table => app.knex(table).select().orderByRaw('1, 2')))
}

t.test('bad bodies on every write of the authenticated interface: a 4xx error body, no row changed', async t => {
  const app = await build(t, config => { Object.assign(config.auth.rateLimit, { perIp: 1000, perEmail: 1000, windowSeconds: 60 }) })
  const admin = await userWithRoles(app, ['Admin'])
  const headers = bearer(admin.token)
  const clientId = await insertClient(app)
  const [userRole] = await rolesOf(app).findByNames(['User'])
  const user = { name: 'U', email: 'u@example.com', password: 'a long password', c_password: 'a long password', roles: ['User'] }

  const cases: [string, string, unknown, number][] = [
    ['POST', '/api/clients', {}, 400],
    ['POST', '/api/clients', { ...client, vat_number: '12345' }, 400],
    ['POST', '/api/clients', { ...client, post_code: '00850' }, 400],
    ['POST', '/api/clients', { ...client, id: 9 }, 400],
    ['POST', '/api/clients', { ...client, name: '\u0000' }, 400],
    ['PUT', `/api/clients/${clientId}`, { name: 'Only a name' }, 400],
    ['PATCH', `/api/clients/${clientId}`, {}, 400],
    ['PATCH', `/api/clients/${clientId}`, { email: 'nope' }, 400],
    ['PATCH', `/api/clients/${clientId}`, { deleted_at: null }, 400],
    ['POST', '/api/roles', { name: 'R' }, 400],
    ['POST', '/api/roles', { name: 'R', permission: 'client-list' }, 400],
    ['POST', '/api/roles', { name: 'R', permission: ['client-list', 'client-list'] }, 400],
    ['POST', '/api/roles', { name: 'R', permission: ['nope'] }, 400],
    ['POST', '/api/roles', { name: '', permission: [] }, 400],
    ['PUT', `/api/roles/${userRole!.id}`, { name: 'User' }, 400],
    ['PATCH', `/api/roles/${userRole!.id}`, { permissions: [] }, 400],
    ['POST', '/api/users', { ...user, c_password: 'different' }, 400],
    ['POST', '/api/users', { ...user, roles: ['Nope'] }, 400],
    ['POST', '/api/users', { ...user, password: 'short', c_password: 'short' }, 400],
    ['POST', '/api/users', { ...user, email: 'x' }, 400],
    ['PUT', `/api/users/${admin.id}`, { name: 'X', email: admin.email }, 400],
    ['PATCH', `/api/users/${admin.id}`, { password: 'a new password' }, 400],
    ['PATCH', `/api/users/${admin.id}`, { token_generation: 5 }, 400],
    ['POST', '/api/login', { email: admin.email }, 400],
    ['POST', '/api/register', { name: 'N', email: 'n@example.com', password: 'a long password' }, 400],
    ['POST', '/api/register', { name: 'N', email: 'n@example.com', password: 'a long password', c_password: 'a long password', roles: ['Admin'] }, 400],
    // Under the body limits (16 of 32 KiB; 8 of 8 KiB on login and register), nested thousands of
    // levels deep (too deep for JSON.stringify to send).
    ...([['/api/clients', 8000], ['/api/roles', 8000], ['/api/users', 8000], ['/api/login', 4000], ['/api/register', 4000]] as const).map(([url, depth]) =>
      ['POST', url, new JsonText(`{"name":${'['.repeat(depth)}${']'.repeat(depth)}}`), 400] as [string, string, unknown, number]),
    ['PATCH', `/api/users/${admin.id}`, new JsonText(`{"name":${'[{"a":'.repeat(1000)}1${'}]'.repeat(1000)}}`), 400],
    ['POST', '/api/clients', 'not json', 415],
    ['POST', '/api/clients', { ...client, name: 'x'.repeat(40_000) }, 413]
  ]
  for (const [method, url, payload, status] of cases) {
    const before = await snapshot(app)
    const res = await app.inject({
      method: method as 'POST',
      url,
      headers: { ...headers, 'content-type': typeof payload === 'string' ? 'text/plain' : 'application/json' },
      payload: payload instanceof JsonText ? payload.text : payload as object
    })
    const label = `${method} ${url} ${(payload instanceof JsonText ? payload.text : JSON.stringify(payload)).slice(0, 60)}`
    t.equal(res.statusCode, status, label)
    t.match(res.json(), { success: false, statusCode: status, error: String, message: String }, label)
    if (status === 400) t.type(res.json().data, 'object', `${label}: names the fields`)
    t.same(await snapshot(app), before, `${label}: no row changed`)
  }
})

t.test('ids beyond any record answer 404 on every resource', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  for (const resource of ['clients', 'roles', 'users']) {
    for (const method of ['GET', 'PATCH', 'DELETE'] as const) {
      const res = await app.inject({ method, url: `/api/${resource}/2147483648`, headers: admin, ...(method === 'PATCH' && { payload: { name: 'X' } }) })
      t.equal(res.statusCode, 404, `${method} ${resource}`)
    }
  }
})
