import t from 'tap'
import { build, buildApp, createDatabase, testConfig } from '../../helper.js'
import { bearer, login, userWithRoles, usersOf } from './accounts.js'

const countUsers = async (app: Awaited<ReturnType<typeof build>>) => Number((await app.knex('users').count({ n: '*' }).first())!.n)

t.test('ADMIN_EMAIL and ADMIN_PASSWORD: start-up makes sure that user exists with Admin', async t => {
  const base = testConfig(await createDatabase(t))
  const config = { ...base, auth: { ...base.auth, adminEmail: 'root@example.com', adminPassword: 'the admin password' } }
  const app = await buildApp(t, config)
  const profile = await app.inject({ url: '/api/profile', headers: bearer(await login(app, 'root@example.com', 'the admin password')) })
  t.match(profile.json().data, { email: 'root@example.com', roles: ['Admin'] })

  // Demoted by hand, then restarted: Admin comes back, the password stays as it is.
  await app.knex('user_roles').delete()
  await app.close()
  const restarted = await buildApp(t, { ...config, auth: { ...config.auth, adminPassword: 'another password' } })
  const again = await restarted.inject({ url: '/api/profile', headers: bearer(await login(restarted, 'root@example.com', 'the admin password')) })
  t.same(again.json().data.roles, ['Admin'])
  t.equal(await countUsers(restarted), 1, 'no second user')
})

t.test('the embedded default creates admin@example.com when nobody holds Admin', async t => {
  const base = testConfig(await createDatabase(t))
  const config = { ...base, auth: { ...base.auth, generateAdmin: true } }
  const app = await buildApp(t, config)
  t.match(await usersOf(app).find(1), { email: 'admin@example.com', roles: [{ name: 'Admin' }] })
  await app.close()

  const again = await buildApp(t, config)
  t.equal(await countUsers(again), 1, 'once only')
  // Demoted, with no other admin: admin@example.com gets Admin back, keeping its password.
  await again.knex('user_roles').delete()
  await again.close()
  const third = await buildApp(t, config)
  t.match(await usersOf(third).find(1), { roles: [{ name: 'Admin' }] })
  t.equal(await countUsers(third), 1)
})

t.test('the embedded default leaves things alone when someone holds Admin', async t => {
  const app = await build(t)
  await userWithRoles(app, ['Admin'], 'boss@example.com')
  const config = { ...app.config, auth: { ...app.config.auth, generateAdmin: true } }
  await app.close()
  const restarted = await buildApp(t, config)
  t.equal(await countUsers(restarted), 1)
})

t.test('with DB_HOST and no ADMIN_EMAIL, no user is created', async t => {
  const app = await build(t)
  t.equal(await countUsers(app), 0)
})

t.test('instances starting together create one administrator between them', async t => {
  // Slow connections of three start-ups at once beside other files are not what this tests.
  const base = testConfig(await createDatabase(t), settings => { settings.timeouts.dbConnect = 15_000; settings.timeouts.dbAcquire = 15_000 })
  for (const auth of [{ ...base.auth, generateAdmin: true }, { ...base.auth, adminEmail: 'root@example.com', adminPassword: 'the admin password' }]) {
    const apps = await Promise.all([1, 2, 3].map(() => buildApp(t, { ...base, auth })))
    t.equal(await usersOf(apps[0]!).countAdmins(apps[0]!.knex), auth.generateAdmin ? 1 : 2, 'one more administrator, not three')
  }
})
