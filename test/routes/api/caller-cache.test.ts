import t, { type Test } from 'tap'
import pg from 'pg'
import type { FastifyInstance } from 'fastify'
import { build, buildApp, createDatabase, testConfig, within } from '../../helper.js'
import { databaseProxy } from '../../faults/database-proxy.js'
import { sleep } from '../../server/process.js'
import { LISTENER_NAME } from '../../../lib/db/notification-listener.js'
import { bearer, PASSWORD, rolesOf, roleWithPermissions, userWithRoles } from './accounts.js'

/**
 * How many token checks have reached the database since this call: the queries whose SQL holds
 * `fragment` (a token's reads revoked_tokens; a key's, `from api_keys k`), sent on the
 * connections the app's pool hands out.
 */
function tokenChecks (app: FastifyInstance, fragment = 'from revoked_tokens where jti'): () => number {
  let count = 0
  const watched = new WeakSet<pg.PoolClient>()
  app.pgPool.on('acquire', client => {
    if (watched.has(client)) return
    watched.add(client)
    const query = client.query.bind(client) as (...args: unknown[]) => unknown
    client.query = ((...args: unknown[]) => {
      if ((args[0] as { text?: string }).text?.includes(fragment)) count++
      return query(...args)
    }) as typeof client.query
  })
  return () => count
}

const status = async (app: FastifyInstance, url: string, token: string) =>
  (await app.inject({ url, headers: bearer(token) })).statusCode

t.test('a token\'s later requests need no database round trip; changes through the same instance hold on the next request', async t => {
  const app = await build(t)
  const checks = tokenChecks(app)
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, ['User'])

  await t.test('three requests with one token check it in the database once', async t => {
    for (let i = 0; i < 3; i++) t.equal(await status(app, '/api/clients', user.token), 200)
    t.equal(checks(), 1, 'three requests, one token check in the database')
  })

  const reader = await roleWithPermissions(app, 'Reader', ['client-list'])
  const put = (url: string, payload: object) => app.inject({ method: 'PUT', url, payload, headers: bearer(admin.token) })

  await t.test('a new role with client-list holds on the next request', async t => {
    t.equal((await put(`/api/users/${user.id}`, { name: 'Test User', email: user.email, roles: [reader.name] })).statusCode, 200)
    t.equal(await status(app, '/api/clients', user.token), 200, 'a new role with client-list')
    t.equal(await status(app, '/api/clients', user.token), 200)
  })

  await t.test('a permission taken from the user\'s role is refused at once; a role giving it back is allowed at once', async t => {
    t.equal((await put(`/api/roles/${reader.id}`, { name: 'Reader', permission: [] })).statusCode, 200)
    t.equal(await status(app, '/api/clients', user.token), 403, 'the role lost client-list: refused at once')
    t.equal((await put(`/api/users/${user.id}`, { name: 'Test User', email: user.email, roles: ['User'] })).statusCode, 200)
    t.equal(await status(app, '/api/clients', user.token), 200, 'given back: allowed at once')
  })

  await t.test('a token logged out is refused at once', async t => {
    t.equal(await status(app, '/api/logout', user.token), 200)
    t.equal(await status(app, '/api/clients', user.token), 401, 'logged out: refused at once')
  })

  await t.test('a token logged out everywhere is refused at once', async t => {
    const other = await userWithRoles(app, ['User'])
    t.equal(await status(app, '/api/profile', other.token), 200)
    t.equal(await status(app, '/api/logout?scope=all', other.token), 200)
    t.equal(await status(app, '/api/profile', other.token), 401, 'logged out everywhere: refused at once')
  })

  await t.test('a deleted user\'s token is refused at once', async t => {
    const deleted = await userWithRoles(app, ['User'])
    t.equal(await status(app, '/api/profile', deleted.token), 200)
    t.equal((await app.inject({ method: 'DELETE', url: `/api/users/${deleted.id}`, headers: bearer(admin.token) })).statusCode, 200)
    t.equal(await status(app, '/api/profile', deleted.token), 401, 'deleted: refused at once')
  })
})

t.test('changes through one instance hold on another within one second', async t => {
  const one = await build(t)
  const other = await build(t, { db: one.config.db })
  const admin = await userWithRoles(one, ['Admin'])
  const otherChecks = tokenChecks(other)
  const otherKeyChecks = tokenChecks(other, 'from api_keys k')

  /** A User-role holder whose token `other` has checked and now remembers. */
  const remembered = async (t: Test) => {
    const user = await userWithRoles(one, ['User'])
    t.equal(await status(other, '/api/clients', user.token), 200)
    // A notification of the change before (which empties what it touches) may still arrive
    // while that first check runs, and a check that a notification overtook is not kept: the
    // next one is, and the requests after it read no database.
    const fromMemory = async () => {
      const before = otherChecks()
      return await status(other, '/api/clients', user.token) === 200 && otherChecks() === before
    }
    t.ok(await within(1_000, fromMemory), 'remembered by the other instance')
    return user
  }
  const refusedOnOther = (token: string, code: number) => within(1_000, async () => await status(other, '/api/clients', token) === code)
  const asAdmin = (method: 'PUT' | 'DELETE', url: string, payload?: object) =>
    one.inject({ method, url, headers: bearer(admin.token), ...(payload && { payload }) })

  await t.test('a logout through one instance holds on the other', async t => {
    const loggedOut = await remembered(t)
    await one.inject({ url: '/api/logout', headers: bearer(loggedOut.token) })
    t.ok(await refusedOnOther(loggedOut.token, 401), 'a logout')
  })

  await t.test('a logout everywhere through one instance holds on the other', async t => {
    const everywhere = await remembered(t)
    await one.inject({ url: '/api/logout?scope=all', headers: bearer(everywhere.token) })
    t.ok(await refusedOnOther(everywhere.token, 401), 'a logout everywhere')
  })

  await t.test('a user deleted through one instance is refused on the other', async t => {
    const deleted = await remembered(t)
    t.equal((await asAdmin('DELETE', `/api/users/${deleted.id}`)).statusCode, 200)
    t.ok(await refusedOnOther(deleted.token, 401), 'a user deletion')
  })

  await t.test('roles taken from a user through one instance are taken on the other', async t => {
    const demoted = await remembered(t)
    t.equal((await asAdmin('PUT', `/api/users/${demoted.id}`, { name: 'Test User', email: demoted.email, roles: [] })).statusCode, 200)
    t.ok(await refusedOnOther(demoted.token, 403), 'a role change')
  })

  await t.test('an administrator\'s password reset through one instance ends the user\'s keys on the other', async t => {
    const owner = await remembered(t)
    const made = await one.inject({ method: 'POST', url: '/api/keys', headers: bearer(owner.token), payload: { name: 'k', permissions: ['client-list'], current_password: PASSWORD } })
    const key: string = made.json().secret
    t.equal(await status(other, '/api/clients', key), 200)
    const fromMemory = async () => {
      const before = otherKeyChecks()
      return await status(other, '/api/clients', key) === 200 && otherKeyChecks() === before
    }
    t.ok(await within(1_000, fromMemory), 'the key remembered by the other instance')
    t.equal((await asAdmin('PUT', `/api/users/${owner.id}`, { name: 'Test User', email: owner.email, password: 'reset by the admin', c_password: 'reset by the admin', roles: ['User'] })).statusCode, 200)
    t.ok(await refusedOnOther(key, 401), 'the key is refused')
  })

  await t.test('a permission taken from a role through one instance is taken on the other', async t => {
    const holder = await remembered(t)
    const role = (await rolesOf(one).findByNames(['User']))[0]!
    t.equal((await asAdmin('PUT', `/api/roles/${role.id}`, { name: 'User', permission: ['client-create'] })).statusCode, 200)
    t.ok(await refusedOnOther(holder.token, 403), 'a permission change')
  })
})

t.test('a change made in the database directly is heard of too', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, ['User'])
  const db = new pg.Client(app.config.db!)
  await db.connect()
  t.teardown(() => db.end())

  await t.test('a role taken away in the database is refused within one second', async t => {
    t.equal(await status(app, '/api/clients', user.token), 200)
    await db.query('delete from user_roles where user_id = $1', [user.id])
    t.ok(await within(1_000, async () => await status(app, '/api/clients', user.token) === 403), 'refused within one second')
  })

  await t.test('a truncation of revoked_tokens forgets every remembered token', async t => {
    t.equal(await status(app, '/api/profile', user.token), 200)
    t.equal(app.callerCache.size, 1)
    await db.query('truncate revoked_tokens')
    t.ok(await within(1_000, () => app.callerCache.size === 0), 'a truncation forgets everything')
  })
})

t.test('while its listening connection is lost, every token is checked in the database; then the cache is back', async t => {
  const app = await build(t)
  const checks = tokenChecks(app)
  const user = await userWithRoles(app, ['User'])
  const db = new pg.Client(app.config.db!)
  await db.connect()
  t.teardown(() => db.end())

  await t.test('losing its listening connection disables the cache at once', async t => {
    t.equal(await status(app, '/api/clients', user.token), 200)
    const { rowCount } = await db.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = current_database()', [LISTENER_NAME])
    t.equal(rowCount, 1, 'one listening connection')
    t.ok(await within(1_000, () => !app.callerCache.enabled), 'the cache is disabled at once')
  })

  await t.test('meanwhile every request checks its token in the database, and a change made holds', async t => {
    const before = checks()
    t.equal(await status(app, '/api/clients', user.token), 200)
    t.equal(await status(app, '/api/clients', user.token), 200)
    t.equal(checks() - before, 2, 'each request checked in the database')
    await db.query('delete from user_roles where user_id = $1', [user.id])
    t.equal(await status(app, '/api/clients', user.token), 403, 'a change made meanwhile holds')
  })

  await t.test('listening again, the cache remembers tokens again', async t => {
    t.ok(await within(5_000, () => app.callerCache.enabled), 'listening again')
    t.equal(await status(app, '/api/profile', user.token), 200)
    const after = checks()
    t.equal(await status(app, '/api/profile', user.token), 200)
    t.equal(checks(), after, 'remembered again')
  })

  await t.test('and hears of changes again', async t => {
    await db.query('insert into user_roles (user_id, role_id) select $1, id from roles where name = $2', [user.id, 'User'])
    t.ok(await within(1_000, async () => await status(app, '/api/clients', user.token) === 200), 'and changes are heard of again')
  })
})

t.test('a listening connection that stops answering is given up within seconds, and the cache with it', async t => {
  const directDb = await createDatabase(t)
  // In front of where the listener connects: PostgreSQL itself, past any pooler (DB_DIRECT_*).
  const proxy = await databaseProxy(t, { ...directDb, ...testConfig(directDb).dbDirect })
  const app = await buildApp(t, testConfig(directDb, { dbDirect: { host: proxy.db.host, port: proxy.db.port } }))
  const user = await userWithRoles(app, ['User'])
  // Straight to the database, past the proxy.
  const db = new pg.Client(directDb)
  await db.connect()
  t.teardown(() => db.end())

  await t.test('the cache is disabled once its heartbeat goes unanswered', async t => {
    t.equal(await status(app, '/api/clients', user.token), 200)
    proxy.freeze()
    t.ok(await within(10_000, () => !app.callerCache.enabled), 'disabled once its heartbeat went unanswered')
  })

  await t.test('once the database answers again, the cache is back and a change made meanwhile holds', async t => {
    await db.query('delete from user_roles where user_id = $1', [user.id])
    await sleep(3_000) // a reconnection attempt times out meanwhile
    proxy.thaw()
    t.ok(await within(5_000, () => app.callerCache.enabled), 'listening again once the database answers')
    t.equal(await status(app, '/api/clients', user.token), 403, 'the change made meanwhile holds')
  })
})

t.test('AUTH_CACHE_SIZE=0: every request checks its token in the database', async t => {
  const app = await build(t, config => { config.auth.cacheSize = 0 })
  const checks = tokenChecks(app)
  const user = await userWithRoles(app, ['User'])
  for (let i = 0; i < 3; i++) t.equal(await status(app, '/api/clients', user.token), 200)
  t.equal(checks(), 3)
  t.equal(app.callerCache.enabled, false)
})
