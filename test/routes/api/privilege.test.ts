import t from 'tap'
import { build, lockWaiters, within } from '../../helper.js'
import { bearer, login, PASSWORD, rolesOf, roleWithPermissions, userWithRoles, usersOf } from './accounts.js'

const NEW_PASSWORD = 'a brand new password'
const newPassword = { password: NEW_PASSWORD, c_password: NEW_PASSWORD }

t.test('nobody edits or deletes a user who holds a permission they lack', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await roleWithPermissions(app, 'Helpdesk', ['user-list', 'user-edit', 'user-delete'])
  const helpdesk = await userWithRoles(app, ['Helpdesk'])
  const plain = await userWithRoles(app, [])
  const headers = bearer(helpdesk.token)

  await t.test('the helpdesk cannot set an Admin\'s password, e-mail address or name', async t => {
    for (const [label, payload] of [['a password', newPassword], ['an e-mail address', { email: 'mine@example.com' }], ['a name', { name: 'Taken Over' }]] as const) {
      const res = await app.inject({ method: 'PATCH', url: `/api/users/${admin.id}`, headers, payload })
      t.equal(res.statusCode, 403, `the helpdesk cannot set an Admin's ${label}`)
      t.match(res.json(), { success: false, statusCode: 403, message: /holds permissions you lack: .*client-create.*role-edit/ })
    }
  })

  await t.test('nor replace or delete the Admin', async t => {
    const put = await app.inject({ method: 'PUT', url: `/api/users/${admin.id}`, headers, payload: { name: 'X', email: admin.email, roles: ['Admin'] } })
    t.equal(put.statusCode, 403, 'nor replace them')
    t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${admin.id}`, headers })).statusCode, 403, 'nor delete them')
  })

  await t.test('the Admin keeps their password, address and name, and stays signed in', async t => {
    t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: admin.email, password: NEW_PASSWORD } })).statusCode, 401, 'the Admin\'s password is unchanged')
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(admin.token) })).statusCode, 200, 'and the Admin is still there, signed in')
    t.match(await usersOf(app).find(admin.id), { email: admin.email, name: 'Test User' })
  })

  await t.test('the helpdesk edits themselves', async t => {
    const own = await app.inject({ method: 'PATCH', url: `/api/users/${helpdesk.id}`, headers, payload: { name: 'Helpdesk Person' } })
    t.equal(own.statusCode, 200, 'editing yourself stays allowed')
  })

  await t.test('the helpdesk edits and deletes a user holding less', async t => {
    const lesser = await app.inject({ method: 'PATCH', url: `/api/users/${plain.id}`, headers, payload: { name: 'Renamed' } })
    t.equal(lesser.statusCode, 200, 'a user holding less can be edited')
    t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${plain.id}`, headers })).statusCode, 200, 'and deleted')
  })

  await t.test('the Admin, who holds everything, edits the helpdesk', async t => {
    const adminEdits = await app.inject({ method: 'PATCH', url: `/api/users/${helpdesk.id}`, headers: bearer(admin.token), payload: { name: 'By the Admin' } })
    t.equal(adminEdits.statusCode, 200, 'who holds everything edits anyone')
  })
})

t.test('a password change ends every token of the user; who changed their own keeps the token they used', async t => {
  const app = await build(t)
  // A second instance on the same database: it hears of the change through PostgreSQL.
  const other = await build(t, { db: app.config.db })
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, [])
  const second = await login(app, user.email)

  await t.test('the other instance knows the user\'s second token', async t => {
    t.equal((await other.inject({ url: '/api/profile', headers: bearer(second) })).statusCode, 200, 'the other instance knows the token')
  })

  await t.test('an admin changing a user\'s password ends both of the user\'s tokens, on both instances', async t => {
    const changed = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: bearer(admin.token), payload: newPassword })
    t.equal(changed.statusCode, 200)
    for (const token of [user.token, second]) {
      t.equal((await app.inject({ url: '/api/profile', headers: bearer(token) })).statusCode, 401, 'ended here')
      t.ok(await within(2_000, async () => (await other.inject({ url: '/api/profile', headers: bearer(token) })).statusCode === 401), 'and on the other instance')
    }
  })

  await t.test('the admin\'s own token is untouched', async t => {
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(admin.token) })).statusCode, 200, 'the admin\'s own token is untouched')
  })

  const self = await userWithRoles(app, ['Admin'])
  const elsewhere = await login(app, self.email)

  await t.test('changing one\'s own password keeps the token used, on both instances, and ends the other token', async t => {
    t.equal((await other.inject({ url: '/api/profile', headers: bearer(self.token) })).statusCode, 200)
    const own = await app.inject({ method: 'PATCH', url: `/api/users/${self.id}`, headers: bearer(self.token), payload: { ...newPassword, current_password: PASSWORD } })
    t.equal(own.statusCode, 200)
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(self.token) })).statusCode, 200, 'the token used keeps working')
    t.ok(await within(2_000, async () => (await other.inject({ url: '/api/profile', headers: bearer(elsewhere) })).statusCode === 401), 'the user\'s other token ends, on every instance')
    t.equal((await other.inject({ url: '/api/profile', headers: bearer(self.token) })).statusCode, 200, 'the token used works on the other instance too')
  })

  await t.test('the old password no longer logs in; the new one does', async t => {
    t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: self.email, password: PASSWORD } })).statusCode, 401, 'the old password is gone')
    t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: self.email, password: NEW_PASSWORD } })).statusCode, 200)
  })

  await t.test('logging out everywhere ends the kept token too', async t => {
    await app.inject({ url: '/api/logout?scope=all', headers: bearer(self.token) })
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(self.token) })).statusCode, 401, 'logging out everywhere ends the kept token too')
  })
})

t.test('one\'s own address or password changes through /api/users only with one\'s current password, as through the profile', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const change = (payload: object, method: 'PATCH' | 'PUT' = 'PATCH') => app.inject({ method, url: `/api/users/${admin.id}`, headers: bearer(admin.token), payload })
  const newPassword = { password: NEW_PASSWORD, c_password: NEW_PASSWORD }

  for (const [what, res] of [
    ['a password', await change(newPassword)],
    ['an address', await change({ email: 'taken.over@example.com' })],
    ['an address, by PUT', await change({ name: 'Admin', email: 'taken.over@example.com', roles: ['Admin'] }, 'PUT')]
  ] as const) {
    t.equal(res.statusCode, 400, `${what} without it is 400`)
    t.match(res.json(), { success: false, data: { current_password: [/is needed/] } })
  }
  t.equal((await change({ name: 'Renamed', email: admin.email, roles: ['Admin'] }, 'PUT')).statusCode, 200, 'a PUT keeping the address needs none')

  const wrong = await change({ ...newPassword, current_password: 'not the password' })
  t.equal(wrong.statusCode, 401)
  t.match(wrong.json(), { success: false, statusCode: 401, message: 'The current password does not match' })
  t.match(wrong.headers['www-authenticate'], /^Bearer/)
  const failed = await app.knex('audit_log').where('action', 'login-failed').select('actor_id', 'resource', 'after')
  t.match(failed, [{ actor_id: admin.id, resource: 'session', after: { email: admin.email, user_id: admin.id } }], 'audited as a failed login')
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: admin.email, password: NEW_PASSWORD } })).statusCode, 401, 'nothing changed')

  t.equal((await change({ ...newPassword, current_password: PASSWORD })).statusCode, 200, 'the right one changes it')
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: admin.email, password: NEW_PASSWORD } })).statusCode, 200)
  const moved = await change({ email: 'moved@example.com', current_password: NEW_PASSWORD })
  t.equal(moved.statusCode, 200)
  t.equal(moved.json().data.email, 'moved@example.com')

  // A recovery that commits between the check and the change wins: the change is refused.
  const recovery = await app.knex.transaction()
  t.teardown(() => recovery.isCompleted() ? undefined : recovery.rollback())
  await recovery('users').where({ id: admin.id }).forUpdate().select('id')
  await recovery('users').where({ id: admin.id }).update({ password: await app.passwords.hash('set by a recovery') })
  const overtaken = change({ email: 'taken.over@example.com', current_password: NEW_PASSWORD })
  t.ok(await lockWaiters(app, 1), 'the change waits on the user')
  await recovery.commit()
  t.equal((await overtaken).statusCode, 401, 'a password replaced since its check is refused')
  t.equal((await app.knex('users').where({ id: admin.id }).first('email')).email, 'moved@example.com', 'the address stays')
})

t.test('taking a permission from a role, or any change to a role holding one the caller lacks, is refused as granting it is', async t => {
  const app = await build(t)
  await roleWithPermissions(app, 'RoleEditor', ['role-list', 'role-edit'])
  const editor = bearer((await userWithRoles(app, ['RoleEditor'])).token)
  const userRole = (await rolesOf(app).findByNames(['User']))[0]!
  const clientPermissions = userRole.permissions.map(p => p.name)

  await t.test('a role editor can neither take User\'s client permissions away nor swap them for their own', async t => {
    for (const permission of [[], ['client-list'], ['client-list', 'role-list']]) {
      const res = await app.inject({ method: 'PATCH', url: `/api/roles/${userRole.id}`, headers: editor, payload: { permission } })
      t.equal(res.statusCode, 403, `User → ${JSON.stringify(permission)}`)
      t.match(res.json().message, /permissions you lack: client-/)
    }
    t.same((await rolesOf(app).find(userRole.id))!.permissions.map(p => p.name), clientPermissions, 'User keeps its permissions')
  })

  await t.test('a role remover cannot delete User, which holds permissions they lack', async t => {
    await roleWithPermissions(app, 'RoleRemover', ['role-list', 'role-delete'])
    const remover = bearer((await userWithRoles(app, ['RoleRemover'])).token)
    const deleted = await app.inject({ method: 'DELETE', url: `/api/roles/${userRole.id}`, headers: remover })
    t.equal(deleted.statusCode, 403, 'nor can a role holding permissions the caller lacks be deleted')
    t.match(deleted.json().message, /permissions you lack: client-/)
    t.ok(await rolesOf(app).find(userRole.id), 'User is still there')
  })

  await t.test('a role editor can neither rename User nor replace it with itself', async t => {
    // Renamed, a role that registration grants by name could be swapped for another.
    for (const payload of [{ name: 'Old User' }, { name: 'User', permission: clientPermissions }]) {
      const res = await app.inject({ method: payload.permission ? 'PUT' : 'PATCH', url: `/api/roles/${userRole.id}`, headers: editor, payload })
      t.equal(res.statusCode, 403, `nor any change to a role holding permissions the caller lacks: ${JSON.stringify(payload)}`)
    }
    t.equal((await rolesOf(app).find(userRole.id))!.name, 'User', 'User keeps its name')
  })

  await t.test('a role editor can take away a permission they hold', async t => {
    const mine = await roleWithPermissions(app, 'Lister', ['role-list'])
    const taken = await app.inject({ method: 'PATCH', url: `/api/roles/${mine.id}`, headers: editor, payload: { permission: [] } })
    t.equal(taken.statusCode, 200, 'a permission the caller holds can be taken away')
    t.same(taken.json().data.permissions, [])
  })
})
