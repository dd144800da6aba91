import t from 'tap'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'

t.test('clients: an admin creates, reads, lists, replaces, patches and soft-deletes a client', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, ['Admin'])
  const headers = bearer(token)
  let data: { id: number }

  await t.test('an admin creates a client, answered 201 with its location', async t => {
    const created = await app.inject({ method: 'POST', url: '/api/clients', headers: { ...headers, 'x-requested-with': 'XMLHttpRequest' }, payload: client })
    t.equal(created.statusCode, 201)
    data = created.json().data
    t.match(created.json(), { success: true, message: 'Client created', data: { ...client, id: Number } })
    t.equal(created.headers.location, `/api/clients/${data.id}`)
  })

  await t.test('the client is read back and listed', async t => {
    t.same((await app.inject({ url: `/api/clients/${data.id}`, headers })).json(), { success: true, data })
    t.same((await app.inject({ url: '/api/clients', headers })).json(), { success: true, data: [data] })
  })

  await t.test('PUT replaces the client, and refuses a body without every field', async t => {
    const put = await app.inject({ method: 'PUT', url: `/api/clients/${data.id}`, headers, payload: { ...client, city: 'Gdańsk' } })
    t.match(put.json().data, { ...client, city: 'Gdańsk' })
    const partial = await app.inject({ method: 'PUT', url: `/api/clients/${data.id}`, headers, payload: { city: 'Gdańsk' } })
    t.equal(partial.statusCode, 400, 'PUT takes every field')
    t.match(partial.json().data, { name: ['is required'] })
  })

  await t.test('PATCH changes only the fields given', async t => {
    const patch = await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { post_code: '80-001' } })
    t.match(patch.json().data, { city: 'Gdańsk', post_code: '80-001' })
  })

  await t.test('PATCH refuses a bad VAT number, post code, e-mail address or name, naming the field', async t => {
    for (const [field, value] of [['vat_number', '123456789'], ['vat_number', '12345678901'], ['post_code', '80001'], ['email', 'x'], ['name', ' ']]) {
      const bad = await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { [field as string]: value } })
      t.equal(bad.statusCode, 400, `${field} ${value}`)
      t.ok(bad.json().data[field as string], `names ${field}`)
    }
  })

  await t.test('DELETE answers 200 with the deleted client\'s id', async t => {
    const deleted = await app.inject({ method: 'DELETE', url: `/api/clients/${data.id}`, headers })
    t.equal(deleted.statusCode, 200)
    t.match(deleted.json(), { success: true, message: 'Client deleted', data: { id: data.id } })
  })

  await t.test('a deleted client is 404 to GET, PATCH and DELETE, and no longer listed', async t => {
    t.equal((await app.inject({ url: `/api/clients/${data.id}`, headers })).statusCode, 404)
    t.equal((await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { city: 'X' } })).statusCode, 404)
    t.equal((await app.inject({ method: 'DELETE', url: `/api/clients/${data.id}`, headers })).statusCode, 404)
    t.same((await app.inject({ url: '/api/clients', headers })).json().data, [])
  })

  await t.test('the deleted client\'s row is kept, with deleted_at set', async t => {
    t.ok((await app.knex('clients').where({ id: data.id }).first()).deleted_at, 'kept, with deleted_at')
  })
})

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
    const adminRole = (await app.rolesRepository.findByNames(['Admin']))[0]!
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
    t.same((await app.rolesRepository.find(role.id))!.permissions.map(p => p.name), ['client-list'], 'unchanged')
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

t.test('users: create, update, delete; last admin; no escalation; never a password', async t => {
  const app = await build(t)
  const first = await userWithRoles(app, ['Admin'])
  const admin = bearer(first.token)
  let user: { id: number }

  await t.test('an admin creates a user, answered 201 with its location and without a password', async t => {
    const created = await app.inject({
      method: 'POST',
      url: '/api/users',
      headers: admin,
      payload: { name: 'Linus', email: 'linus@example.com', password: 'a long password', c_password: 'a long password', roles: ['User'] }
    })
    t.equal(created.statusCode, 201)
    user = created.json().data
    t.match(user, { name: 'Linus', email: 'linus@example.com', roles: [{ name: 'User' }] })
    t.notMatch(created.body, /password/)
    t.equal(created.headers.location, `/api/users/${user.id}`)
  })

  await t.test('a mismatched confirmation, an unknown role or an address already taken is refused', async t => {
    const mismatch = await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { name: 'X', email: 'x@example.com', password: 'a long password', c_password: 'another one' } })
    t.same(mismatch.json().data, { c_password: ['must equal password'] })
    const unknownRole = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { roles: ['Wizard'] } })
    t.same(unknownRole.json().data, { roles: ['unknown role: Wizard'] })
    t.equal((await app.inject({ method: 'POST', url: '/api/users', headers: admin, payload: { name: 'Y', email: 'LINUS@example.com', password: 'a long password', c_password: 'a long password' } })).statusCode, 409)

    const confirmationOnly = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { c_password: 'a long password' } })
    t.same(confirmationOnly.json().data, { c_password: ['must equal password'] })
    const taken = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { email: `USER${first.id}@example.com`.replace(`USER${first.id}`, first.email.split('@')[0]!.toUpperCase()) } })
    t.equal(taken.statusCode, 409, 'an address taken')
  })

  await t.test('PUT replaces the user\'s name and roles', async t => {
    const renamed = await app.inject({ method: 'PUT', url: `/api/users/${user.id}`, headers: admin, payload: { name: 'Linus T.', email: 'linus@example.com', roles: [] } })
    t.match(renamed.json().data, { name: 'Linus T.', roles: [] })
  })

  await t.test('a password an admin sets is the one the user logs in with', async t => {
    const password = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { password: 'a new password!', c_password: 'a new password!' } })
    t.equal(password.statusCode, 200)
    t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'linus@example.com', password: 'a new password!' } })).statusCode, 200)
  })

  await t.test('a user manager cannot hand out Admin, to themselves or to a new user', async t => {
    // A user manager without the role-* or user-delete permissions cannot hand out Admin.
    await roleWithPermissions(app, 'UserManager', ['user-list', 'user-create', 'user-edit'])
    const manager = await userWithRoles(app, ['UserManager'])
    const escalate = await app.inject({ method: 'PATCH', url: `/api/users/${manager.id}`, headers: bearer(manager.token), payload: { roles: ['UserManager', 'Admin'] } })
    t.equal(escalate.statusCode, 403)
    const escalateNew = await app.inject({ method: 'POST', url: '/api/users', headers: bearer(manager.token), payload: { name: 'Z', email: 'z@example.com', password: 'a long password', c_password: 'a long password', roles: ['Admin'] } })
    t.equal(escalateNew.statusCode, 403)
    t.equal(await app.knex('users').where({ email: 'z@example.com' }).first(), undefined, 'nothing written')
  })

  await t.test('the last admin can be neither demoted nor deleted', async t => {
    const demote = await app.inject({ method: 'PATCH', url: `/api/users/${first.id}`, headers: admin, payload: { roles: [] } })
    t.equal(demote.statusCode, 409, 'the last admin keeps Admin')
    const removeSelf = await app.inject({ method: 'DELETE', url: `/api/users/${first.id}`, headers: admin })
    t.equal(removeSelf.statusCode, 409, 'the last admin cannot be deleted')
    t.match((await app.usersRepository.find(first.id))!.roles, [{ name: 'Admin' }])
  })

  const second = await userWithRoles(app, ['Admin'])

  await t.test('with another admin, the first can be deleted, and their token stops working', async t => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${first.id}`, headers: bearer(second.token) })).statusCode, 200, 'with another admin, it can')
    t.equal((await app.inject({ url: '/api/profile', headers: admin })).statusCode, 401, 'the deleted user\'s token stops working')
  })

  await t.test('deleting a user answers 200; after that it is 404 to GET, PATCH and DELETE', async t => {
    const gone = await app.inject({ method: 'DELETE', url: `/api/users/${user.id}`, headers: bearer(second.token) })
    t.equal(gone.statusCode, 200)
    t.equal((await app.inject({ url: `/api/users/${user.id}`, headers: bearer(second.token) })).statusCode, 404)
    for (const method of ['PATCH', 'DELETE'] as const) {
      t.equal((await app.inject({ method, url: `/api/users/${user.id}`, headers: bearer(second.token), ...(method === 'PATCH' && { payload: { name: 'X' } }) })).statusCode, 404)
    }
  })

  await t.test('a deleted user\'s address can be registered again', async t => {
    const reuse = await app.inject({ method: 'POST', url: '/api/register', payload: { name: 'New Linus', email: 'linus@example.com', password: 'a long password', c_password: 'a long password' } })
    t.equal(reuse.statusCode, 201, 'a deleted user\'s address is free again')
  })

  await t.test('the user list shows no password', async t => {
    const list = await app.inject({ url: '/api/users', headers: bearer(second.token) })
    t.notMatch(list.body, /argon2|"password"/)
  })
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
