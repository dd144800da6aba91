import { once } from 'node:events'
import readline from 'node:readline'
import t from 'tap'
import { createDatabase, TEST_JWT_SECRET, within } from '../helper.js'
import { databaseProxy } from '../faults/database-proxy.js'
import { databaseEnv, freePort, spawnServer, startServer } from './process.js'

t.test('a bad configuration stops start-up with a message naming the variable', async t => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: 'eighty' }, 'Invalid configuration: PORT must be a whole number from 0 to 65535, got "eighty"'],
    // Set to blanks: never silently the default.
    [{ PORT: ' ' }, 'Invalid configuration: PORT is blank']
  ]
  for (const [env, message] of cases) {
    const child = spawnServer({ ...process.env, ...env }, 'pipe')
    let stderr = ''
    child.stderr!.on('data', chunk => { stderr += chunk })
    const [code] = await once(child, 'exit')
    t.equal(code, 1)
    t.match(stderr, message)
  }
})

/** A server process that is not expected to be listening soon: its log, as it comes. */
function watchServer (env: NodeJS.ProcessEnv) {
  const child = spawnServer({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', MAX_EVENT_LOOP_DELAY: '60s', ...env })
  const logs: { level: number, msg: string, url?: string, err?: { message: string } }[] = []
  readline.createInterface({ input: child.stdout! }).on('line', line => logs.push(JSON.parse(line)))
  const exited = once(child, 'exit').then(([code]) => code as number)
  // Killed if the test ends first; it runs in a process group of its own.
  const kill = () => { try { process.kill(-child.pid!, 'SIGKILL') } catch { /* gone */ } }
  const waiting = () => logs.filter(entry => entry.msg.startsWith('the database does not answer yet'))
  return { logs, exited, kill, waiting }
}

t.test('start-up fails cleanly when the database cannot be reached within DB_STARTUP_WAIT, saying so at every try', async t => {
  const server = watchServer({ ...await databaseEnv(t), DB_HOST: '127.0.0.1', DB_PORT: '1', DB_STARTUP_WAIT: '1s' })
  t.teardown(server.kill)
  t.equal(await server.exited, 1)
  t.match(server.waiting(), [{ level: 40, msg: /^the database does not answer yet \(connect ECONNREFUSED 127\.0\.0\.1:1\); trying again in \d+ ms, for up to DB_STARTUP_WAIT \(1000 ms\) in all$/ }], 'one more try, logged')
  t.match(server.logs.at(-1), { level: 60, msg: 'could not start', err: { message: /^The database did not answer within DB_STARTUP_WAIT \(1000 ms\): connect ECONNREFUSED/ } })
})

t.test('a database that answers seconds after the service starts (a container beside it): start-up waits for it, then serves', async t => {
  const db = await createDatabase(t)
  const port = await freePort()
  const server = watchServer({ ...process.env, JWT_SECRET: TEST_JWT_SECRET, DB_HOST: '127.0.0.1', DB_PORT: String(port), DB_NAME: db.database, DB_USER: db.user, DB_PASSWORD: db.password })
  t.teardown(server.kill)
  t.ok(await within(60_000, () => server.waiting().length >= 2), 'refused, and tried again')
  // PostgreSQL answers on that port from now on.
  await databaseProxy(t, db, { port })
  t.ok(await within(60_000, () => server.logs.some(entry => entry.msg.startsWith('serving at'))), 'once it answers, the service migrates and listens')
  const { url } = server.logs.find(entry => entry.msg.startsWith('serving at'))!
  const created = await fetch(`${url}/students`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Late', email: 'late@example.com', age: 30, dob: '1996-01-01' }) })
  t.equal(created.status, 201, 'and serves on it')
})

t.test('an error that trying again would not mend (no such database) ends start-up at once', async t => {
  const server = watchServer({ ...await databaseEnv(t), DB_NAME: 'no_such_database' })
  t.teardown(server.kill)
  t.equal(await server.exited, 1)
  t.same(server.waiting(), [], 'no try again')
  t.match(server.logs.at(-1), { level: 60, msg: 'could not start', err: { message: 'database "no_such_database" does not exist' } })
})

t.test('start-up warns of a role of MFA_REQUIRED_ROLES that does not exist, whatever the case of those that do', async t => {
  const server = await startServer({ ...await databaseEnv(t), MFA_REQUIRED_ROLES: 'admin, Auditors' })
  t.teardown(() => server.kill())
  const said = (start: string) => server.logs.filter(entry => typeof entry.msg === 'string' && entry.msg.startsWith(start))
  t.ok(await within(5_000, () => said('serving at').length > 0))
  t.same(said('MFA_REQUIRED_ROLES').map(({ level, roles }) => ({ level, roles })), [{ level: 40, roles: ['Auditors'] }])
})

t.test('start-up says where the service and its documentation are', async t => {
  const server = await startServer(await databaseEnv(t))
  t.teardown(() => server.kill())
  const serving = () => server.logs.find(entry => typeof entry.msg === 'string' && entry.msg.startsWith('serving at'))
  t.ok(await within(5_000, () => serving() !== undefined), 'right after listening')
  const line = serving()
  t.match(line, { url: server.url, documentation: `${server.url}/documentation`, msg: `serving at ${server.url}; the API documentation is at ${server.url}/documentation` })
  t.equal((await fetch(line!.documentation as string)).status, 200, 'and the documentation is there')
  const metrics = server.logs.find(entry => typeof entry.metrics === 'string')
  t.match(metrics, { msg: /^serving the metrics at http:\/\/127\.0\.0\.1:\d+\/metrics$/ }, 'and where the metrics are')
  t.equal((await fetch(metrics!.metrics as string)).status, 200, 'which are there')
  t.equal((await fetch(`${server.url}/metrics`)).status, 404, 'and not on the API\'s port')
})
