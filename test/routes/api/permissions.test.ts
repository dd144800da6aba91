import t from 'tap'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'

const ALL = ['client', 'role', 'user'].flatMap(resource => ['list', 'create', 'edit', 'delete'].map(action => `${resource}-${action}`))

t.test('every guarded route: 403 without its permission (all others held), 2xx with it', async t => {
  const plain = await build(t)
  // Many logins from one address: limits out of the way.
  const app = await build(t, { db: plain.config.db, auth: { ...plain.config.auth, rateLimit: { ...plain.config.auth.rateLimit, perIp: 1000, perEmail: 1000, windowSeconds: 60 } } })
  const routes: [string, string, string, (() => Promise<object | undefined>)?][] = []
  const target = async () => ({
    client: (await app.clientsRepository.create(client)).id,
    role: (await roleWithPermissions(app, `Target ${Math.random()}`, [])).id,
    user: (await userWithRoles(app, [])).id
  })
  let n = 0
  const bodies = {
    client: () => client,
    role: () => ({ name: `Role ${++n}`, permission: [] }),
    user: () => ({ name: 'U', email: `made${++n}@example.com`, password: 'a long password', c_password: 'a long password', roles: [] })
  }
  for (const resource of ['client', 'role', 'user'] as const) {
    routes.push(
      [`${resource}-list`, 'GET', `/api/${resource}s`],
      [`${resource}-list`, 'GET', `/api/${resource}s/:id`],
      [`${resource}-create`, 'POST', `/api/${resource}s`, async () => bodies[resource]()],
      [`${resource}-edit`, 'PUT', `/api/${resource}s/:id`, async () => {
        if (resource !== 'user') return bodies[resource]()
        const { password: _p, c_password: _c, ...rest } = bodies.user()
        return rest
      }],
      [`${resource}-edit`, 'PATCH', `/api/${resource}s/:id`, async () => ({ name: `Patched ${++n}` })],
      [`${resource}-delete`, 'DELETE', `/api/${resource}s/:id`]
    )
  }

  for (const [permission, method, path, body] of routes) {
    const without = await roleWithPermissions(app, `All but ${permission} (${method} ${path})`, ALL.filter(p => p !== permission))
    const denied = await userWithRoles(app, [without.name])
    const allowed = await userWithRoles(app, ['Admin'])
    const ids = await target()
    const url = path.replace(':id', String(ids[permission.split('-')[0] as keyof typeof ids]))
    const payload = await body?.()
    const refused = await app.inject({ method: method as 'GET', url, headers: bearer(denied.token), ...(payload && { payload }) })
    t.equal(refused.statusCode, 403, `without ${permission}: ${method} ${path}`)
    const accepted = await app.inject({ method: method as 'GET', url, headers: bearer(allowed.token), ...(payload && { payload }) })
    t.ok(accepted.statusCode >= 200 && accepted.statusCode < 300, `with ${permission}: ${method} ${path} → ${accepted.statusCode} ${accepted.statusCode >= 300 ? accepted.body : ''}`)
  }
})
