import { execFile, spawn } from 'node:child_process'
import net from 'node:net'
import { promisify } from 'node:util'
import t from 'tap'
import { databaseEnv, embeddedEnv, freePort, startServer } from './server/process.js'
import { tempDataDir, within } from './helper.js'
import { PUBLIC_URL, startMailServer } from './mail-server.js'

const run = promisify(execFile)

const steps = (...names: string[]) => names.map(name => `ok - ${name}`)
const registered = steps('register', 'login', 'refresh', 'list sessions', 'end the other session', 'its token is refused', 'profile')
const granted = steps('log in as the administrator', 'the administrator gives the user the User role', 'the administrator logs out')
const rest = steps(
  'create a client', 'a retry of the create gets the same client', 'list clients', 'a batch of clients answers each row',
  'make an API key', 'the key reads clients', 'and may not delete one', 'revoke the key', 'the revoked key is refused',
  'update a client with PATCH and If-Match', 'a stale If-Match gets 412 and the current tag', 'delete a client', 'the deleted client is gone',
  'start enrolling an authenticator app', 'confirm it with its first code: recovery codes, shown once', 'a login now waits for a code', 'the code completes the login',
  'the session reauthenticates', 'and makes an API key without the password', 'that session logs out', 'logout',
  'the token no longer works', 'create a student (v1)', 'read it through /students',
  'rename it (v1 PUT)', 'change its age (PATCH /students)',
  'a filtered, sorted list finds it', 'and counts it', 'delete it', 'it is gone from v1 too'
)

/** Runs the scenario as its header says, with only the given administrator's settings. */
async function scenario (url: string, admin: { ADMIN_EMAIL?: string, ADMIN_PASSWORD?: string } = {}) {
  const env: NodeJS.ProcessEnv = { ...process.env, ...admin }
  if (!admin.ADMIN_PASSWORD) delete env.ADMIN_PASSWORD
  return run('npx', ['tsx', 'examples/client/scenario.ts', url], { env })
    .then(({ stdout, stderr }) => ({ code: 0, steps: stdout.trim().split('\n'), stderr }),
      (error: { code: number, stdout: string, stderr: string }) => ({ code: error.code, steps: error.stdout.trim().split('\n'), stderr: error.stderr }))
}

t.test('a client generated from openapi.json type-checks and runs a whole scenario against a server with REGISTER_ROLES=User', async t => {
  await run('npx', ['openapi-typescript', 'openapi.json', '-o', 'examples/client/api.d.ts'])
  // Generated and type-checked: either step that fails rejects, and fails the test.
  await run('npx', ['tsc', '-p', 'examples/client/tsconfig.json'])

  const server = await startServer({ ...await databaseEnv(t), REGISTER_ROLES: 'User' })
  t.teardown(() => server.kill())
  const { code, steps } = await scenario(server.url)
  t.equal(code, 0)
  t.same(steps, [...registered, ...rest], 'the registered user holds the User role: no administrator needed')
})

t.test('against the quick start (npm start, defaults): the administrator it logged gives the user the User role', async t => {
  const dataDir = await tempDataDir(t, 'client-quick-start-')
  const server = await startServer(embeddedEnv(dataDir))
  t.teardown(() => server.kill())
  const password = server.logs.find(entry => entry.msg === 'created the administrator: this password is shown once only')?.password as string

  const unset = await scenario(server.url)
  t.equal(unset.code, 1, 'without the administrator\'s password, it stops')
  t.same(unset.steps, registered, 'where the user would need a role')
  t.match(unset.stderr, /^not ok - the user may manage clients: HTTP 200 \{"success":true,"data":\{.*"roles":\[\],"permissions":\[\].*\}\}\nThe user holds no role: set ADMIN_PASSWORD .* or start the service with REGISTER_ROLES=User\.\n$/,
    'saying so: the step, the answer that shows it, and both ways out')

  const wrong = await scenario(server.url, { ADMIN_PASSWORD: 'not the administrator\'s password' })
  t.equal(wrong.code, 1)
  t.match(wrong.stderr, /^not ok - log in as the administrator: HTTP 401 \{"success":false,"statusCode":401,"error":"Unauthorized","code":"invalid_credentials","message":"[^"]+"\}\n$/,
    'a failed step prints its name, the status and the body')

  const right = await scenario(server.url, { ADMIN_PASSWORD: password })
  t.equal(right.code, 0)
  t.same(right.steps, [...registered, ...granted, ...rest], 'the whole scenario, with the administrator\'s step')
})

t.test('a typed client resets a forgotten password: the mail asked for, its link\'s token read from a real SMTP server, the new password logs in', async t => {
  const mail = await startMailServer(t)
  const admin = { email: 'admin@example.com', password: 'an administrator\'s password' }
  const server = await startServer({ ...await databaseEnv(t), ADMIN_EMAIL: admin.email, ADMIN_PASSWORD: admin.password, SMTP_URL: mail.url, MAIL_FROM: 'records@example.com', PUBLIC_URL })
  t.teardown(() => server.kill())
  const client = (...args: string[]) => run('npx', ['tsx', 'examples/client/reset-password.ts', server.url, ...args])

  t.same((await client('forgot', admin.email)).stdout.trim().split('\n'), steps('ask for a reset mail'))
  const token = /reset-password\?token=([\w-]+)/.exec((await mail.next()).text ?? '')?.[1]
  t.ok(token, 'the mail links to the reset page with a token')
  const reset = await client('reset', token!, 'a new password of the admin', admin.email)
  t.same(reset.stdout.trim().split('\n'), steps('set the new password with the mailed token', 'log in with it'))
  const again = await client('reset', token!, 'another password', admin.email).catch((error: { code: number, stderr: string }) => error)
  t.match(again, { code: 1, stderr: /^not ok - set the new password with the mailed token: HTTP 400 .*"code":"invalid_reset_token"/ }, 'a token works once')
})

t.test('without a service to answer, the scenario says so', async t => {
  const { code, steps, stderr } = await scenario(`http://127.0.0.1:${await freePort()}`)
  t.equal(code, 1)
  t.same(steps, [''], 'no step passed')
  t.match(stderr, /^not ok - no answer from http:\/\/127\.0\.0\.1:\d+ \(connect ECONNREFUSED [^)]+\): is the service running \(npm start\)\?\n$/)
})

t.test('a receiver typed from the document\'s webhooks checks each delivery\'s signature, takes each event once, and prints the students created', async t => {
  const admin = { email: 'admin@example.com', password: 'an administrator\'s password' }
  const server = await startServer({ ...await databaseEnv(t), ADMIN_EMAIL: admin.email, ADMIN_PASSWORD: admin.password, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_FIRST_RETRY: '100ms' })
  t.teardown(() => server.kill())
  const post = async (path: string, body: object, token?: string) => {
    const res = await fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...token === undefined ? {} : { authorization: `Bearer ${token}` } }, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() as { data: { id: number }, secret: string } }
  }
  const token = (await post('/api/login', admin)).body.data as unknown as string
  const port = await freePort()
  const made = await post('/api/webhooks', { url: `http://127.0.0.1:${port}/`, types: ['student.created'] }, token)
  t.equal(made.status, 201)

  // Typed by the first test's generated api.d.ts (tsc checks every file of examples/client/).
  const receiver = spawn(process.execPath, ['--import', 'tsx', 'examples/client/webhook-receiver.ts', String(port)], { env: { ...process.env, WEBHOOK_SECRET: made.body.secret } })
  t.teardown(() => { receiver.kill() })
  let printed = ''
  receiver.stdout.setEncoding('utf8').on('data', (chunk: string) => { printed += chunk })
  // Listening before the students are made: a first attempt that found it not yet up would be
  // tried again after the second event's, and the two would arrive out of order (as the README
  // says deliveries may).
  t.ok(await within(30_000, () => new Promise<boolean>(resolve => {
    const probe = net.connect(port, '127.0.0.1', () => { probe.destroy(); resolve(true) }).on('error', () => resolve(false))
  })), 'the receiver listens')
  t.equal((await post('/students', { name: 'Ada Lovelace', email: 'ada@example.com', age: 36, dob: '1815-12-10' })).status, 201)
  t.equal((await post('/students', { name: 'Alan Turing', email: 'alan@example.com', age: 41, dob: '1912-06-23' })).status, 201)
  const deadline = Date.now() + 20_000
  while (printed.split('\n').length < 3 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 50))
  t.match(printed.trim().split('\n'), [/^\d+ student\.created: Ada Lovelace <ada@example\.com>$/, /^\d+ student\.created: Alan Turing <alan@example\.com>$/],
    'both, in order, each once (the first attempts may have found it not yet listening)')

  const forged = await fetch(`http://127.0.0.1:${port}/`, {
    method: 'POST',
    headers: { 'webhook-id': '1', 'webhook-timestamp': String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,bm90IHRoZSBzZXJ2aWNlJ3M=' },
    body: '{"id":1,"type":"student.created"}'
  })
  t.equal(forged.status, 401, 'a delivery not signed with the secret is refused')
})
