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
