import t from 'tap'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'

t.test('clients: an admin creates, reads, lists, replaces, patches and soft-deletes a client', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, ['Admin'])
  const headers = bearer(token)

  const created = await app.inject({ method: 'POST', url: '/api/clients', headers: { ...headers, 'x-requested-with': 'XMLHttpRequest' }, payload: client })
  t.equal(created.statusCode, 201)
  const { data } = created.json()
  t.match(created.json(), { success: true, message: 'Client created', data: { ...client, id: Number } })
  t.equal(created.headers.location, `/api/clients/${data.id}`)

  t.same((await app.inject({ url: `/api/clients/${data.id}`, headers })).json(), { success: true, data })
  t.same((await app.inject({ url: '/api/clients', headers })).json(), { success: true, data: [data] })

  const put = await app.inject({ method: 'PUT', url: `/api/clients/${data.id}`, headers, payload: { ...client, city: 'Gdańsk' } })
  t.match(put.json().data, { ...client, city: 'Gdańsk' })
  const partial = await app.inject({ method: 'PUT', url: `/api/clients/${data.id}`, headers, payload: { city: 'Gdańsk' } })
  t.equal(partial.statusCode, 400, 'PUT takes every field')
  t.match(partial.json().data, { name: ['is required'] })
  const patch = await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { post_code: '80-001' } })
  t.match(patch.json().data, { city: 'Gdańsk', post_code: '80-001' })

  for (const [field, value] of [['vat_number', '123456789'], ['vat_number', '12345678901'], ['post_code', '80001'], ['email', 'x'], ['name', ' ']]) {
    const bad = await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { [field as string]: value } })
    t.equal(bad.statusCode, 400, `${field} ${value}`)
    t.ok(bad.json().data[field as string], `names ${field}`)
  }

  const deleted = await app.inject({ method: 'DELETE', url: `/api/clients/${data.id}`, headers })
  t.equal(deleted.statusCode, 200)
  t.match(deleted.json(), { success: true, message: 'Client deleted', data: { id: data.id } })
  t.equal((await app.inject({ url: `/api/clients/${data.id}`, headers })).statusCode, 404)
  t.equal((await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { city: 'X' } })).statusCode, 404)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/clients/${data.id}`, headers })).statusCode, 404)
  t.same((await app.inject({ url: '/api/clients', headers })).json().data, [])
  t.ok((await app.knex('clients').where({ id: data.id }).first()).deleted_at, 'kept, with deleted_at')
})

t.test('roles: create, update, delete; the Admin role is protected; nobody grants what they lack', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)

  const created = await app.inject({ method: 'POST', url: '/api/roles', headers: admin, payload: { name: 'Editor', permission: ['client-list', 'client-edit'] } })
  t.equal(created.statusCode, 201)
  const role = created.json().data
  t.match(role, { name: 'Editor', permissions: [{ name: 'client-list' }, { name: 'client-edit' }] })
  t.equal(created.headers.location, `/api/roles/${role.id}`)

  t.equal((await app.inject({ method: 'POST', url: '/api/roles', headers: admin, payload: { name: 'editor', permission: [] } })).statusCode, 409)
  const unknown = await app.inject({ method: 'POST', url: '/api/roles', headers: admin, payload: { name: 'X', permission: ['fly'] } })
  t.equal(unknown.statusCode, 400)
  t.same(unknown.json().data, { permission: ['unknown permission: fly'] })

  const patched = await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: admin, payload: { permission: ['client-list'] } })
  t.same(patched.json().data.permissions.map((p: { name: string }) => p.name), ['client-list'])
  const renamed = await app.inject({ method: 'PUT', url: `/api/roles/${role.id}`, headers: admin, payload: { name: 'Reader', permission: ['client-list'] } })
  t.equal(renamed.json().data.name, 'Reader')

  const adminRole = (await app.rolesRepository.findByNames(['Admin']))[0]!
  const everything = adminRole.permissions.map(p => p.name)
  for (const payload of [{ name: 'Boss' }, { permission: everything.slice(1) }]) {
    const res = await app.inject({ method: 'PATCH', url: `/api/roles/${adminRole.id}`, headers: admin, payload })
    t.equal(res.statusCode, 409, JSON.stringify(payload).slice(0, 40))
  }
  t.equal((await app.inject({ method: 'PATCH', url: `/api/roles/${adminRole.id}`, headers: admin, payload: { name: 'Admin', permission: everything } })).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/api/roles/${adminRole.id}`, headers: admin })).statusCode, 409)

  await roleWithPermissions(app, 'RoleManager', ['role-list', 'role-create', 'role-edit', 'client-list'])
  const manager = bearer((await userWithRoles(app, ['RoleManager'])).token)
  const escalate = await app.inject({ method: 'POST', url: '/api/roles', headers: manager, payload: { name: 'Sneaky', permission: ['user-delete'] } })
  t.equal(escalate.statusCode, 403)
  const escalateEdit = await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: manager, payload: { permission: ['client-list', 'user-edit'] } })
  t.equal(escalateEdit.statusCode, 403)
  t.same((await app.rolesRepository.find(role.id))!.permissions.map(p => p.name), ['client-list'], 'unchanged')

  const holder = await userWithRoles(app, ['Reader'])
  t.equal((await app.inject({ url: '/api/clients', headers: bearer(holder.token) })).statusCode, 200)
  const deleted = await app.inject({ method: 'DELETE', url: `/api/roles/${role.id}`, headers: admin })
  t.equal(deleted.statusCode, 200)
  t.equal(deleted.json().data.name, 'Reader')
  t.equal((await app.inject({ url: '/api/clients', headers: bearer(holder.token) })).statusCode, 403, 'the holder lost it on the next request')
  t.equal((await app.inject({ url: `/api/roles/${role.id}`, headers: admin })).statusCode, 404)
  for (const method of ['PATCH', 'DELETE'] as const) {
    t.equal((await app.inject({ method, url: `/api/roles/${role.id}`, headers: admin, ...(method === 'PATCH' && { payload: { name: 'X' } }) })).statusCode, 404)
  }
  const other = await roleWithPermissions(app, 'Other', [])
  t.equal((await app.inject({ method: 'PATCH', url: `/api/roles/${other.id}`, headers: admin, payload: { name: 'ADMIN' } })).statusCode, 409, 'a name taken')
  const list = await app.inject({ url: '/api/roles?limit=1', headers: admin })
  t.equal(list.json().data.length, 1)
  t.match(list.headers.link, /^<\/api\/roles\?limit=1&after=\d+>; rel="next"$/)
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

t.test('users: create, update, delete; last admin; no escalation; never a password', async t => {
  const app = await build(t)
  const first = await userWithRoles(app, ['Admin'])
  const admin = bearer(first.token)

  const created = await app.inject({
    method: 'POST',
    url: '/api/users',
    headers: admin,
    payload: { name: 'Linus', email: 'linus@example.com', password: 'a long password', c_password: 'a long password', roles: ['User'] }
  })
  t.equal(created.statusCode, 201)
  const user = created.json().data
  t.match(user, { name: 'Linus', email: 'linus@example.com', roles: [{ name: 'User' }] })
  t.notMatch(created.body, /password/)
  t.equal(created.headers.location, `/api/users/${user.id}`)

  const mismatch = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { name: 'X', email: 'x@example.com', password: 'a long password', c_password: 'another one' } })
  t.same(mismatch.json().data, { c_password: ['must equal password'] })
  const unknownRole = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { roles: ['Wizard'] } })
  t.same(unknownRole.json().data, { roles: ['unknown role: Wizard'] })
  t.equal((await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { name: 'Y', email: 'LINUS@example.com', password: 'a long password', c_password: 'a long password' } })).statusCode, 409)

  const confirmationOnly = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { c_password: 'a long password' } })
  t.same(confirmationOnly.json().data, { c_password: ['must equal password'] })
  const taken = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { email: `USER${first.id}@example.com`.replace(`USER${first.id}`, first.email.split('@')[0]!.toUpperCase()) } })
  t.equal(taken.statusCode, 409, 'an address taken')
  const renamed = await app.inject({ method: 'PUT', url: `/api/users/${user.id}`, headers: admin, payload: { name: 'Linus T.', email: 'linus@example.com', roles: [] } })
  t.match(renamed.json().data, { name: 'Linus T.', roles: [] })
  const password = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { password: 'a new password!', c_password: 'a new password!' } })
  t.equal(password.statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'linus@example.com', password: 'a new password!' } })).statusCode, 200)

  // A user manager without the role-* or user-delete permissions cannot hand out Admin.
  await roleWithPermissions(app, 'UserManager', ['user-list', 'user-create', 'user-edit'])
  const manager = await userWithRoles(app, ['UserManager'])
  const escalate = await app.inject({ method: 'PATCH', url: `/api/users/${manager.id}`, headers: bearer(manager.token), payload: { roles: ['UserManager', 'Admin'] } })
  t.equal(escalate.statusCode, 403)
  const escalateNew = await app.inject({ method: 'POST', url: '/api/users', headers: bearer(manager.token), payload: { name: 'Z', email: 'z@example.com', password: 'a long password', c_password: 'a long password', roles: ['Admin'] } })
  t.equal(escalateNew.statusCode, 403)
  t.equal(await app.knex('users').where({ email: 'z@example.com' }).first(), undefined, 'nothing written')

  const demote = await app.inject({ method: 'PATCH', url: `/api/users/${first.id}`, headers: admin, payload: { roles: [] } })
  t.equal(demote.statusCode, 409, 'the last admin keeps Admin')
  const removeSelf = await app.inject({ method: 'DELETE', url: `/api/users/${first.id}`, headers: admin })
  t.equal(removeSelf.statusCode, 409, 'the last admin cannot be deleted')
  t.match((await app.usersRepository.find(first.id))!.roles, [{ name: 'Admin' }])

  const second = await userWithRoles(app, ['Admin'])
  t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${first.id}`, headers: bearer(second.token) })).statusCode, 200, 'with another admin, it can')
  t.equal((await app.inject({ url: '/api/profile', headers: admin })).statusCode, 401, 'the deleted user\'s token stops working')

  const gone = await app.inject({ method: 'DELETE', url: `/api/users/${user.id}`, headers: bearer(second.token) })
  t.equal(gone.statusCode, 200)
  t.equal((await app.inject({ url: `/api/users/${user.id}`, headers: bearer(second.token) })).statusCode, 404)
  for (const method of ['PATCH', 'DELETE'] as const) {
    t.equal((await app.inject({ method, url: `/api/users/${user.id}`, headers: bearer(second.token), ...(method === 'PATCH' && { payload: { name: 'X' } }) })).statusCode, 404)
  }
  const reuse = await app.inject({ method: 'POST', url: '/api/register', payload: { name: 'New Linus', email: 'linus@example.com', password: 'a long password', c_password: 'a long password' } })
  t.equal(reuse.statusCode, 201, 'a deleted user\'s address is free again')
  const list = await app.inject({ url: '/api/users', headers: bearer(second.token) })
  t.notMatch(list.body, /argon2|"password"/)
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
