import t from 'tap'
import { build } from '../../helper.js'
import { bearer, roleWithPermissions, userWithRoles, usersOf } from './accounts.js'

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
    // A name that JavaScript and PostgreSQL lower-case differently (İ: i and a dot, or i).
    t.equal((await app.inject({ method: 'POST', url: '/api/roles', headers: admin, payload: { name: 'İzmir', permission: ['client-list'] } })).statusCode, 201)
    const given = await app.inject({ method: 'PATCH', url: `/api/users/${user.id}`, headers: admin, payload: { roles: ['User', 'İzmir'] } })
    t.match(given.json(), { data: { roles: [{ name: 'User' }, { name: 'İzmir' }] } }, 'a role named with İ is given')
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
    t.match((await usersOf(app).find(first.id))!.roles, [{ name: 'Admin' }])
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
