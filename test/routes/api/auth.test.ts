import os from 'node:os'
import t from 'tap'
import { ARGON2_OPTIONS } from '../../../lib/auth/argon2-options.js'
import { build, lockWaiters, within } from '../../helper.js'
import { bearer, login, PASSWORD, userWithRoles } from './accounts.js'

const JWT = /^[\w-]+\.[\w-]+\.[\w-]+$/
const registration = { name: 'Grace Hopper', email: 'grace@example.com', password: PASSWORD, c_password: PASSWORD }

t.test('register answers 201 and a token for the new user; the address is then taken', async t => {
  // At the service's own hashing cost, whose parameters the stored hash shows.
  const app = await build(t, config => { config.auth.passwordHashing = ARGON2_OPTIONS })
  let token: string

  await t.test('register answers 201, a token and the new user\'s location', async t => {
    const res = await app.inject({ method: 'POST', url: '/api/register', payload: registration })
    t.equal(res.statusCode, 201)
    t.match(res.json(), { success: true, data: JWT })
    t.match(res.headers.location, /^\/api\/users\/\d+$/)
    token = res.json().data
  })

  await t.test('the token shows the new user\'s profile, with no roles and no password', async t => {
    const profile = await app.inject({ url: '/api/profile', headers: bearer(token) })
    t.equal(profile.statusCode, 200)
    t.match(profile.json().data, { name: 'Grace Hopper', email: 'grace@example.com', roles: [], permissions: [] })
    t.notMatch(profile.body, /password|argon2/)
  })

  await t.test('the address is then taken, in any case', async t => {
    const again = await app.inject({ method: 'POST', url: '/api/register', payload: { ...registration, email: 'GRACE@example.com' } })
    t.equal(again.statusCode, 409)
    t.match(again.json(), { success: false, statusCode: 409, message: 'The e-mail address GRACE@example.com is taken' })
  })

  await t.test('the password is stored as an argon2id hash', async t => {
    const row = await app.knex('users').where({ email: 'grace@example.com' }).first()
    t.match(row.password, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/, 'stored as an argon2id hash')
  })
})

t.test('register refuses bad bodies and writes nothing', async t => {
  const app = await build(t)
  const cases: [Record<string, unknown>, Record<string, unknown>][] = [
    [{}, { name: ['is required'], email: ['is required'], password: ['is required'], c_password: ['is required'] }],
    [{ ...registration, c_password: 'something else' }, { c_password: ['must equal password'] }],
    [{ ...registration, password: 'short', c_password: 'short' }, { password: Array }],
    [{ ...registration, password: 'x'.repeat(129), c_password: 'x'.repeat(129) }, { password: Array }],
    [{ ...registration, email: 'not an address' }, { email: ['must match format "email"'] }],
    [{ ...registration, roles: ['Admin'] }, { roles: ['is not allowed'] }]
  ]
  for (const [payload, data] of cases) {
    const res = await app.inject({ method: 'POST', url: '/api/register', payload })
    t.equal(res.statusCode, 400, JSON.stringify(payload).slice(0, 80))
    t.match(res.json(), { success: false, statusCode: 400, data })
  }
  t.equal((await app.knex('users').count({ n: '*' }).first())!.n, '0', 'no user written')
})

t.test('REGISTER_ROLES names the roles a new user gets', async t => {
  const app = await build(t)
  const configured = await build(t, { db: app.config.db, auth: { ...app.config.auth, registerRoles: ['User'] } })
  const res = await configured.inject({ method: 'POST', url: '/api/register', payload: registration })
  const profile = await configured.inject({ url: '/api/profile', headers: bearer(res.json().data) })
  t.same(profile.json().data.roles, ['User'])
  t.same(profile.json().data.permissions, ['client-create', 'client-delete', 'client-edit', 'client-list'])
})

t.test('login: a token for the right password, the same 401 for a wrong address or password', async t => {
  const app = await build(t)
  const { email } = await userWithRoles(app, ['User'], 'ada@example.com')

  await t.test('the right password gets a token, whatever the case of the address', async t => {
    const ok = await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'ADA@example.com', password: PASSWORD } })
    t.equal(ok.statusCode, 200)
    t.match(ok.json(), { success: true, data: JWT })
  })

  await t.test('a wrong password and an unknown address get the same 401', async t => {
    const wrongPassword = await app.inject({ method: 'POST', url: '/api/login', payload: { email, password: 'not the password' } })
    const wrongEmail = await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'nobody@example.com', password: PASSWORD } })
    for (const res of [wrongPassword, wrongEmail]) {
      t.equal(res.statusCode, 401)
      t.equal(res.headers['www-authenticate'], 'Bearer realm="api"')
    }
    t.equal(wrongPassword.body, wrongEmail.body, 'the same body')
    t.same(wrongEmail.json(), { success: false, statusCode: 401, error: 'Unauthorized', code: 'invalid_credentials', message: 'These credentials do not match our records' })
  })

  await t.test('an empty body is 400, naming both fields', async t => {
    const empty = await app.inject({ method: 'POST', url: '/api/login', payload: {} })
    t.equal(empty.statusCode, 400)
    t.match(empty.json().data, { email: ['is required'], password: ['is required'] })
  })
})

t.test('logout ends the presented token at once; scope=all ends every token of the user', async t => {
  const app = await build(t)
  const { email, token } = await userWithRoles(app, ['User'])
  const other = await login(app, email)

  await t.test('logout ends the presented token at once, and no other', async t => {
    const out = await app.inject({ url: '/api/logout', headers: bearer(token) })
    t.equal(out.statusCode, 200)
    t.same(out.json(), { success: true, data: null, message: 'Logged out' })
    const after = await app.inject({ url: '/api/profile', headers: bearer(token) })
    t.equal(after.statusCode, 401)
    t.equal(after.headers['www-authenticate'], 'Bearer realm="api"')
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(other) })).statusCode, 200, 'the other token still works')
  })

  await t.test('logout with scope=all ends every token of the user', async t => {
    const third = await login(app, email)
    t.equal((await app.inject({ url: '/api/logout?scope=all', headers: bearer(third) })).statusCode, 200)
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(other) })).statusCode, 401)
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(third) })).statusCode, 401)
  })

  await t.test('a new login works again; an unknown scope is 400', async t => {
    const fresh = await login(app, email)
    t.equal((await app.inject({ url: '/api/profile', headers: bearer(fresh) })).statusCode, 200, 'a new login works again')
    t.equal((await app.inject({ url: '/api/logout?scope=some', headers: bearer(fresh) })).statusCode, 400)
  })
})

t.test('a logout holds across a restart of the app', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, [])
  await app.inject({ url: '/api/logout', headers: bearer(token) })
  await app.close()
  const restarted = await build(t, { db: app.config.db })
  t.equal((await restarted.inject({ url: '/api/profile', headers: bearer(token) })).statusCode, 401)
})

t.test('profile lists the caller\'s roles and permissions; permissions lists every one', async t => {
  const app = await build(t)
  const { token, id, email } = await userWithRoles(app, ['Admin', 'User'])
  // Every permission there is, whichever resources there are: the Admin role holds them all.
  const byName = await app.knex('permissions').orderBy('name').pluck('name')
  t.ok(byName.length > 0, 'there are permissions')

  await t.test('profile lists the caller\'s roles and permissions, and nothing more', async t => {
    const res = await app.inject({ url: '/api/profile', headers: bearer(token) })
    t.equal(res.statusCode, 200)
    const profile = res.json().data
    t.match(profile, { id, email, name: 'Test User', roles: ['Admin', 'User'] })
    t.same(profile.permissions, byName, 'each permission once, by name: all of them, as an Admin')
    t.same(Object.keys(profile).sort(), ['created_at', 'email', 'email_verified_at', 'id', 'name', 'pending_email', 'permissions', 'roles', 'updated_at'])
  })

  await t.test('permissions lists every one, in order, to a user with no role', async t => {
    const permissions = await app.inject({ url: '/api/permissions', headers: bearer((await userWithRoles(app, [])).token) })
    t.equal(permissions.statusCode, 200)
    t.same(permissions.json().data.map((p: { name: string }) => p.name), await app.knex('permissions').orderBy('id').pluck('name'), 'in the order they were made')
  })

  await t.test('HEAD /api/profile answers 200', async t => {
    const head = await app.inject({ method: 'HEAD', url: '/api/profile', headers: bearer(token) })
    t.equal(head.statusCode, 200)
  })
})

t.test('login and register are rate limited per IP and per e-mail address', async t => {
  const app = await build(t)
  const limited = await build(t, { db: app.config.db, auth: { ...app.config.auth, rateLimit: { ...app.config.auth.rateLimit, perIp: 5, perEmail: 2, windowSeconds: 60 } } })
  const attempt = (email: string, ip = '10.0.0.1') =>
    limited.inject({ method: 'POST', url: '/api/login', payload: { email, password: 'wrong password' }, remoteAddress: ip })

  await t.test('a third attempt for one address, in any case, is 429 with Retry-After', async t => {
    t.equal((await attempt('a@example.com')).statusCode, 401)
    t.equal((await attempt('A@example.com')).statusCode, 401)
    const third = await attempt('a@example.com')
    t.equal(third.statusCode, 429, 'per e-mail, without regard to case')
    t.match(third.headers['retry-after'], /^\d+$/)
    t.ok(Number(third.headers['retry-after']) >= 1 && Number(third.headers['retry-after']) <= 60)
    t.match(third.json(), { success: false, statusCode: 429, error: 'Too Many Requests' })
  })

  await t.test('the e-mail limit holds from another IP', async t => {
    t.equal((await attempt('a@example.com', '10.0.0.2')).statusCode, 429, 'the e-mail limit holds from another IP')
  })

  await t.test('a sixth attempt from one IP is 429; another IP is not held back', async t => {
    t.equal((await attempt('b@example.com')).statusCode, 401)
    t.equal((await attempt('c@example.com')).statusCode, 401)
    t.equal((await attempt('d@example.com')).statusCode, 429, 'per IP')
    t.equal((await attempt('e@example.com', '10.0.0.3')).statusCode, 401, 'another IP is not held back')
  })

  await t.test('once the window has passed, attempts are counted afresh', async t => {
    await limited.knex('rate_limits').update({ reset_at: limited.knex.raw("now() - interval '1 second'") })
    t.equal((await attempt('a@example.com')).statusCode, 401, 'a new window starts afresh')
  })

  await t.test('register counts separately from login', async t => {
    const registers = await limited.inject({ method: 'POST', url: '/api/register', payload: {}, remoteAddress: '10.0.0.9' })
    t.equal(registers.statusCode, 400, 'register counts separately from login')
  })
})

t.test('one form of an e-mail address decides both whose it is and what it is counted as', async t => {
  const app = await build(t)
  const limited = await build(t, { db: app.config.db, auth: { ...app.config.auth, rateLimit: { ...app.config.auth.rateLimit, perIp: 1000, perEmail: 3, windowSeconds: 60 } } })
  const { email } = await userWithRoles(app, [], 'kit@example.com')
  const login = (address: string, password = PASSWORD) =>
    limited.inject({ method: 'POST', url: '/api/login', payload: { email: address, password } })
  // Case, fullwidth letters and the Kelvin sign fold together; "İ" (U+0130) is another letter.
  const spellings = ['KIT@EXAMPLE.COM', '\uFF4B\uFF49\uFF54@example.com', '\u212Ait@example.com', 'Kit@\uFF25XAMPLE.com']
  const dotted = 'k\u0130t@example.com'

  await t.test('every spelling that folds to the address logs the user in', async t => {
    for (const spelling of spellings) {
      t.equal((await login(spelling)).statusCode, 200, `${spelling} names the user`)
      await limited.knex('rate_limits').delete()
    }
  })

  await t.test('a spelling with İ names nobody', async t => {
    t.equal((await login(dotted)).statusCode, 401, 'a spelling with İ names nobody')
  })

  await t.test('after three failures under any spellings, every spelling is held back', async t => {
    await limited.knex('rate_limits').delete()
    for (const spelling of spellings.slice(0, 3)) t.equal((await login(spelling, 'wrong password')).statusCode, 401)
    for (const spelling of [email, ...spellings]) {
      t.equal((await login(spelling)).statusCode, 429, `after three failures under any spelling, ${spelling} is held back`)
    }
  })

  await t.test('and a spelling with İ does not get in either', async t => {
    t.not((await login(dotted)).statusCode, 200, 'and a spelling with İ does not get in either')
  })

  await t.test('the address is taken for registration in any case', async t => {
    const taken = await app.inject({ method: 'POST', url: '/api/register', payload: { name: 'K', email: 'KIT@example.com', password: PASSWORD, c_password: PASSWORD } })
    t.equal(taken.statusCode, 409, 'the address is taken in any case')
  })
})

t.test('a malformed login is answered 400 without being counted; a well-formed one is counted', async t => {
  const app = await build(t, config => { Object.assign(config.auth.rateLimit, { perIp: 1, perEmail: 10, windowSeconds: 60 }) })
  const login = (payload: object) => app.inject({ method: 'POST', url: '/api/login', payload, remoteAddress: '10.0.0.1' })

  await t.test('malformed logins are answered 400 and counted nowhere', async t => {
    for (const payload of [{}, { email: 'a@example.com' }, { email: 'a@example.com', password: '' }, { email: 'a@example.com', password: 'x', extra: 1 }]) {
      t.equal((await login(payload)).statusCode, 400)
    }
    t.same(await app.knex('rate_limits').pluck('key'), [], 'nothing counted')
  })

  await t.test('a well-formed login spends the IP\'s one attempt', async t => {
    t.equal((await login({ email: 'a@example.com', password: 'wrong password' })).statusCode, 401)
    t.equal((await login({ email: 'b@example.com', password: 'wrong password' })).statusCode, 429, 'the IP\'s one attempt is spent')
  })
})

t.test('counters whose window has passed are swept away', async t => {
  const app = await build(t, config => { config.auth.rateLimit.windowSeconds = 1 })
  const keys = async () => (await app.knex('rate_limits').pluck('key')).sort()
  await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'a@example.com', password: 'wrong password' }, remoteAddress: '10.0.0.1' })
  t.same(await keys(), ['login:email:a@example.com', 'login:ip:10.0.0.1'], 'counted')
  t.ok(await within(5_000, async () => (await keys()).length === 0), 'gone after the window')
})

t.test('a flood of logins past HANDLER_TIMEOUT: the timed-out ones are not hashed after all, so the next login is answered', async t => {
  const app = await build(t, config => {
    config.timeouts.handler = 2_000
    Object.assign(config.auth.rateLimit, { perIp: 100_000, perEmail: 100_000 })
    config.auth.passwordHashing = ARGON2_OPTIONS
  })
  const { email } = await userWithRoles(app, [])
  const attempt = () => app.inject({ method: 'POST', url: '/api/login', payload: { email, password: PASSWORD } })
  // Some 6 s of hashing however many cores hash (about 10 ms a hash), queued at once: most wait
  // past the 2 s limit.
  const flood = await Promise.all(Array.from({ length: 600 * os.availableParallelism() }, attempt))
  const codes = new Set(flood.map(res => res.statusCode))
  t.ok(flood.some(res => res.statusCode === 503), 'some timed out')
  t.same([...codes].filter(code => code !== 200 && code !== 503), [], 'the others logged in')
  // Had the timed-out logins still been hashed, this one would wait behind them past its own limit.
  t.equal((await attempt()).statusCode, 200, 'the next login is answered')
})

t.test('20 concurrent registrations of one address: one 201, the rest 409, one row', async t => {
  // Limits high enough that the uniqueness check, not the rate limit, answers.
  const app = await build(t, config => { Object.assign(config.auth.rateLimit, { perIp: 100, perEmail: 100, windowSeconds: 60 }) })
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => app.inject({
    method: 'POST',
    url: '/api/register',
    payload: { ...registration, email: i % 2 ? 'Race@Example.com' : 'race@example.COM' }
  })))
  const codes = results.map(res => res.statusCode).sort()
  t.same(codes, [201, ...Array(19).fill(409)])
  t.equal((await app.knex('users').whereRaw("lower(email) = 'race@example.com'").count({ n: '*' }).first())!.n, '1')
})

t.test('a failed login\'s audit entry is a guarded write: the time limit waits for it, and a 503 never follows it', async t => {
  const app = await build(t, config => { config.timeouts.handler = 2_000 })
  const { email } = await userWithRoles(app, [])
  const failures = async () => Number((await app.knex('audit_log').where('action', 'login-failed').count({ n: '*' }).first())!.n)
  // Another transaction holds the audit log, so that the entry waits past HANDLER_TIMEOUT.
  const holder = await app.knex.transaction()
  await holder.raw('lock table audit_log in share mode')
  const answer = app.inject({ method: 'POST', url: '/api/login', payload: { email, password: 'not the password' } })
  t.ok(await lockWaiters(app, 1), 'the entry waits')
  await new Promise(resolve => setTimeout(resolve, 3_000))
  await holder.commit()
  const res = await answer
  t.equal(res.statusCode, 401, 'answered by the write, not by the time limit')
  t.equal(await failures(), 1, 'and written')
})
