import t from 'tap'
import { build } from '../../helper.js'
import { bearer, rolesOf, roleWithPermissions, userWithRoles } from './accounts.js'

t.test('roles: create, update, delete; the Admin role is protected; nobody grants what they lack', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  let role: { id: number }

  await t.test('an admin creates a role with permissions, answered 201 with its location', async t => {
    const created = await app.inject({ method: 'POST', url: '/api/roles', headers: admin, payload: { name: 'Editor', permission: ['client-list', 'client-edit'] } })
    t.equal(created.statusCode, 201)
    role = created.json().data
    t.match(role, { name: 'Editor', permissions: [{ name: 'client-list' }, { name: 'client-edit' }] })
    t.equal(created.headers.location, `/api/roles/${role.id}`)
  })

  await t.test('a name taken in another case is 409; an unknown permission is 400, named', async t => {
    t.equal((await app.inject({ method: 'POST', url: '/api/roles', headers: admin, payload: { name: 'editor', permission: [] } })).statusCode, 409)
    const unknown = await app.inject({ method: 'POST', url: '/api/roles', headers: admin, payload: { name: 'X', permission: ['fly'] } })
    t.equal(unknown.statusCode, 400)
    t.same(unknown.json().data, { permission: ['unknown permission: fly'] })
  })

  await t.test('PATCH sets the role\'s permissions; PUT renames it', async t => {
    const patched = await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: admin, payload: { permission: ['client-list'] } })
    t.same(patched.json().data.permissions.map((p: { name: string }) => p.name), ['client-list'])
    const renamed = await app.inject({ method: 'PUT', url: `/api/roles/${role.id}`, headers: admin, payload: { name: 'Reader', permission: ['client-list'] } })
    t.equal(renamed.json().data.name, 'Reader')
  })

  await t.test('the Admin role can be neither renamed, stripped of a permission nor deleted; left as it is, a PATCH passes', async t => {
    const adminRole = (await rolesOf(app).findByNames(['Admin']))[0]!
    const everything = adminRole.permissions.map(p => p.name)
    for (const payload of [{ name: 'Boss' }, { permission: everything.slice(1) }]) {
      const res = await app.inject({ method: 'PATCH', url: `/api/roles/${adminRole.id}`, headers: admin, payload })
      t.equal(res.statusCode, 409, JSON.stringify(payload).slice(0, 40))
    }
    t.equal((await app.inject({ method: 'PATCH', url: `/api/roles/${adminRole.id}`, headers: admin, payload: { name: 'Admin', permission: everything } })).statusCode, 200)
    t.equal((await app.inject({ method: 'DELETE', url: `/api/roles/${adminRole.id}`, headers: admin })).statusCode, 409)
  })

  await t.test('a role manager cannot grant a permission they lack, by creating a role or editing one', async t => {
    await roleWithPermissions(app, 'RoleManager', ['role-list', 'role-create', 'role-edit', 'client-list'])
    const manager = bearer((await userWithRoles(app, ['RoleManager'])).token)
    const escalate = await app.inject({ method: 'POST', url: '/api/roles', headers: manager, payload: { name: 'Sneaky', permission: ['user-delete'] } })
    t.equal(escalate.statusCode, 403)
    const escalateEdit = await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: manager, payload: { permission: ['client-list', 'user-edit'] } })
    t.equal(escalateEdit.statusCode, 403)
    t.same((await rolesOf(app).find(role.id))!.permissions.map(p => p.name), ['client-list'], 'unchanged')
  })

  await t.test('deleting a role answers 200 with it, and its holder loses its permissions on the next request', async t => {
    const holder = await userWithRoles(app, ['Reader'])
    t.equal((await app.inject({ url: '/api/clients', headers: bearer(holder.token) })).statusCode, 200)
    const deleted = await app.inject({ method: 'DELETE', url: `/api/roles/${role.id}`, headers: admin })
    t.equal(deleted.statusCode, 200)
    t.equal(deleted.json().data.name, 'Reader')
    t.equal((await app.inject({ url: '/api/clients', headers: bearer(holder.token) })).statusCode, 403, 'the holder lost it on the next request')
  })

  await t.test('a deleted role is 404 to GET, PATCH and DELETE', async t => {
    t.equal((await app.inject({ url: `/api/roles/${role.id}`, headers: admin })).statusCode, 404)
    for (const method of ['PATCH', 'DELETE'] as const) {
      t.equal((await app.inject({ method, url: `/api/roles/${role.id}`, headers: admin, ...(method === 'PATCH' && { payload: { name: 'X' } }) })).statusCode, 404)
    }
  })

  await t.test('renaming a role to a name taken in another case is 409', async t => {
    const other = await roleWithPermissions(app, 'Other', [])
    t.equal((await app.inject({ method: 'PATCH', url: `/api/roles/${other.id}`, headers: admin, payload: { name: 'ADMIN' } })).statusCode, 409, 'a name taken')
  })

  await t.test('the role list pages with a link to the next page', async t => {
    const list = await app.inject({ url: '/api/roles?limit=1', headers: admin })
    t.equal(list.json().data.length, 1)
    t.match(list.headers.link, /^<\/api\/roles\?limit=1&after=\d+>; rel="next"$/)
  })
})

t.test('a permission given to a role works on the holder\'s next request', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const role = await roleWithPermissions(app, 'Viewer', [])
  const viewer = bearer((await userWithRoles(app, ['Viewer'])).token)
  t.equal((await app.inject({ url: '/api/clients', headers: viewer })).statusCode, 403)
  await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: admin, payload: { permission: ['client-list'] } })
  t.equal((await app.inject({ url: '/api/clients', headers: viewer })).statusCode, 200)
})
