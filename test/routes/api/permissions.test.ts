import t, { type Test } from 'tap'
import fc from 'fast-check'
import { build } from '../../helper.js'
import { bearer, client, insertClient, roleWithPermissions, userWithRoles } from './accounts.js'

type Route = [permission: string, method: string, path: string, body?: () => Promise<object | undefined>]

/** An app with rate limits out of the way, every guarded route, and a way to make fresh targets for them. */
async function guardedRoutes (t: Test) {
  // Many logins from one address: limits out of the way.
  const app = await build(t, config => { Object.assign(config.auth.rateLimit, { perIp: 1000, perEmail: 1000, windowSeconds: 60 }) })
  const routes: Route[] = []
  const target = async () => ({
    client: await insertClient(app),
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

  // Every permission there is, whichever resources there are.
  const all: string[] = await app.knex('permissions').pluck('name')
  return { app, routes, target, all }
}

t.test('every guarded route: 403 without its permission (all others held), 2xx with it', async t => {
  const { app, routes, target, all } = await guardedRoutes(t)

  for (const [permission, method, path, body] of routes) {
    const without = await roleWithPermissions(app, `All but ${permission} (${method} ${path})`, all.filter(p => p !== permission))
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

t.test('random permission sets × every guarded route: 2xx exactly when the permission is held, else 403; no token: 401', async t => {
  const { app, routes, target, all } = await guardedRoutes(t)
  let sets = 0
  await fc.assert(fc.asyncProperty(fc.subarray(all), async held => {
    const role = await roleWithPermissions(app, `Set ${++sets}`, held)
    const { token } = await userWithRoles(app, [role.name])
    for (const [permission, method, path, body] of routes) {
      const ids = await target()
      const url = path.replace(':id', String(ids[permission.split('-')[0] as keyof typeof ids]))
      const payload = await body?.()
      const res = await app.inject({ method: method as 'GET', url, headers: bearer(token), ...(payload && { payload }) })
      const expected = held.includes(permission) ? '2xx' : '403'
      const actual = res.statusCode >= 200 && res.statusCode < 300 ? '2xx' : String(res.statusCode)
      if (actual !== expected) throw new Error(`holding [${held}]: ${method} ${path} → ${res.statusCode} ${res.body}`)
      const anonymous = await app.inject({ method: method as 'GET', url, ...(payload && { payload }) })
      if (anonymous.statusCode !== 401) throw new Error(`no token: ${method} ${path} → ${anonymous.statusCode}`)
    }
  }), { numRuns: 12 })
  t.equal(sets, 12, 'twelve permission sets, each against every guarded route')
})
