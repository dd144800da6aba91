import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { buildApp, createDatabase, testConfig, TEST_JWT_SECRET, within } from '../helper.js'
import { bearer, PASSWORD, userWithRoles } from '../routes/api/accounts.js'

const run = promisify(execFile)

t.test('npm run reset-password: a new password, printed once; the old one, every token and every API key end', async t => {
  const db = await createDatabase(t)
  const app = await buildApp(t, testConfig(db))
  const admin = await userWithRoles(app, ['Admin'])
  const env = { ...process.env, JWT_SECRET: TEST_JWT_SECRET, DB_HOST: db.host, DB_PORT: String(db.port), DB_NAME: db.database, DB_USER: db.user, DB_PASSWORD: db.password }
  const command = (...args: string[]) => run(process.execPath, [...process.execArgv, 'scripts/reset-password.ts', ...args], { env })

  const made = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(admin.token), payload: { name: 'k', permissions: [], current_password: PASSWORD } })
  const key: string = made.json().secret
  t.equal((await app.inject({ url: '/api/profile', headers: bearer(key) })).statusCode, 200, 'the key works before')

  const { stdout } = await command(admin.email.toUpperCase())
  const password = new RegExp(`^The new password of ${admin.email.toUpperCase()}: (\\S+)$`, 'm').exec(stdout)?.[1]
  t.ok(password, 'printed')
  const login = (password: string) => app.inject({ method: 'POST', url: '/api/login', payload: { email: admin.email, password } })
  t.equal((await login(password!)).statusCode, 200, 'the new password logs in')
  t.equal((await login(PASSWORD)).statusCode, 401, 'the old one does not')
  t.ok(await within(2_000, async () => (await app.inject({ url: '/api/profile', headers: bearer(admin.token) })).statusCode === 401), 'the user\'s tokens end')
  t.ok(await within(2_000, async () => (await app.inject({ url: '/api/profile', headers: bearer(key) })).statusCode === 401), 'and their keys, cached here before')
  t.same(await app.knex('api_keys').whereNull('revoked_at').pluck('id'), [], 'revoked')

  const unknown = await command('nobody@example.com').catch((error: { code: number, stderr: string }) => error)
  t.match(unknown, { code: 1, stderr: /No user has the e-mail address nobody@example.com/ })
  const usage = await command().catch((error: { code: number, stderr: string }) => error)
  t.match(usage, { code: 2, stderr: /Usage: npm run reset-password -- <e-mail address>/ })
})
