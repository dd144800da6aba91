import t from 'tap'
import { within } from '../helper.js'
import { databaseEnv, startServer, type ServerProcess } from './process.js'

const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
const PASSWORD = 'correct horse battery'

t.test('two instances on two ports, one database: a logout through one holds on the other within a second; rate limits are shared', async t => {
  const env = { ...await databaseEnv(t), AUTH_RATE_LIMIT_EMAIL: '4' }
  const [one, other] = await Promise.all([startServer(env), startServer(env)]) as [ServerProcess, ServerProcess]
  t.teardown(() => { one.kill(); other.kill() })

  const registered = await fetch(`${one.url}/api/register`, json({ name: 'Two', email: 'two@example.com', password: PASSWORD, c_password: PASSWORD }))
  t.equal(registered.status, 201)
  const token = ((await registered.json()) as { data: string }).data
  const profile = (server: ServerProcess) => fetch(`${server.url}/api/profile`, { headers: { authorization: `Bearer ${token}` } }).then(res => res.status)
  t.equal(await profile(other), 200)
  t.equal(await profile(other), 200, 'remembered by the other instance')

  t.equal((await fetch(`${one.url}/api/logout`, { headers: { authorization: `Bearer ${token}` } })).status, 200)
  t.equal(await profile(one), 401, 'refused at once where the logout was made')
  t.ok(await within(1_000, async () => await profile(other) === 401), 'refused by the other instance within a second')

  // Four attempts per address in all: two through each instance, then both refuse.
  const login = (server: ServerProcess) => fetch(`${server.url}/api/login`, json({ email: 'two@example.com', password: 'wrong password' })).then(res => res.status)
  t.same([await login(one), await login(other), await login(one), await login(other)], [401, 401, 401, 401])
  t.same([await login(one), await login(other)], [429, 429], 'the limit counts across instances')
})

t.test('two instances: a session ended through one is refused by the other; a refresh token reused through one ends its session on the other', async t => {
  const env = { ...await databaseEnv(t), REFRESH_REUSE_GRACE: '1s' }
  const [one, other] = await Promise.all([startServer(env), startServer(env)]) as [ServerProcess, ServerProcess]
  t.teardown(() => { one.kill(); other.kill() })
  interface Tokens { data: string, refresh_token: string }
  const registered = await fetch(`${one.url}/api/register`, json({ name: 'Sessions', email: 'sessions@example.com', password: PASSWORD, c_password: PASSWORD }))
  t.equal(registered.status, 201)
  const first = await registered.json() as Tokens
  const logIn = async () => await (await fetch(`${other.url}/api/login`, json({ email: 'sessions@example.com', password: PASSWORD }))).json() as Tokens
  const second = await logIn()
  const status = (server: ServerProcess, token: string) => fetch(`${server.url}/api/profile`, { headers: { authorization: `Bearer ${token}` } }).then(res => res.status)
  t.same([await status(other, first.data), await status(other, first.data)], [200, 200], 'remembered by the other instance')

  const sid = JSON.parse(Buffer.from(first.data.split('.')[1]!, 'base64url').toString()).sid as number
  const ended = await fetch(`${one.url}/api/sessions/${sid}`, { method: 'DELETE', headers: { authorization: `Bearer ${second.data}` } })
  t.equal(ended.status, 200)
  t.ok(await within(1_000, async () => await status(other, first.data) === 401), 'the ended session is refused by the other instance within a second')
  t.equal(await status(other, second.data), 200, 'the other session lives on')

  const next = await (await fetch(`${one.url}/api/token/refresh`, json({ refresh_token: second.refresh_token }))).json() as Tokens
  t.same([await status(one, next.data), await status(one, next.data)], [200, 200], 'remembered by the first instance')
  // Past the grace of 1 s, the spent token comes back through the other instance.
  await new Promise(resolve => setTimeout(resolve, 1_200))
  const reused = await fetch(`${other.url}/api/token/refresh`, json({ refresh_token: second.refresh_token }))
  t.equal(reused.status, 401)
  t.ok(await within(1_000, async () => await status(one, next.data) === 401), 'the session\'s newest token is refused by the first instance within a second')
})

t.test('two instances: an owner who loses a role through one loses it for their key on the other; a key revoked through one is refused by the other', async t => {
  const env = { ...await databaseEnv(t), ADMIN_EMAIL: 'admin@example.com', ADMIN_PASSWORD: PASSWORD, REGISTER_ROLES: 'User' }
  const [one, other] = await Promise.all([startServer(env), startServer(env)]) as [ServerProcess, ServerProcess]
  t.teardown(() => { one.kill(); other.kill() })
  const tokenOf = async (email: string) => (await (await fetch(`${one.url}/api/login`, json({ email, password: PASSWORD }))).json() as { data: string }).data
  const headers = (token: string) => ({ authorization: `Bearer ${token}`, 'content-type': 'application/json' })
  const registered = await fetch(`${one.url}/api/register`, json({ name: 'Owner', email: 'owner@example.com', password: PASSWORD, c_password: PASSWORD }))
  t.equal(registered.status, 201)
  const owner = await registered.json() as { data: string }
  const ownerId = Number(JSON.parse(Buffer.from(owner.data.split('.')[1]!, 'base64url').toString()).sub)
  const makeKey = async () => (await (await fetch(`${one.url}/api/keys`, { method: 'POST', headers: headers(owner.data), body: JSON.stringify({ name: 'k', permissions: ['client-list'], current_password: PASSWORD }) })).json()) as { data: { id: number }, secret: string }
  const clients = (server: ServerProcess, key: string) => fetch(`${server.url}/api/clients`, { headers: { authorization: `Bearer ${key}` } }).then(res => res.status)

  const revoked = await makeKey()
  t.same([await clients(other, revoked.secret), await clients(other, revoked.secret)], [200, 200], 'remembered by the other instance')
  t.equal((await fetch(`${one.url}/api/keys/${revoked.data.id}`, { method: 'DELETE', headers: { authorization: `Bearer ${owner.data}` } })).status, 200)
  t.ok(await within(1_000, async () => await clients(other, revoked.secret) === 401), 'the revoked key is refused by the other instance within a second')

  const kept = await makeKey()
  t.same([await clients(other, kept.secret), await clients(other, kept.secret)], [200, 200])
  const admin = await tokenOf('admin@example.com')
  const demoted = await fetch(`${one.url}/api/users/${ownerId}`, { method: 'PATCH', headers: headers(admin), body: JSON.stringify({ roles: [] }) })
  t.equal(demoted.status, 200)
  t.ok(await within(1_000, async () => await clients(other, kept.secret) === 403), 'the owner lost client-list: the key is refused it by the other instance within a second')
})
