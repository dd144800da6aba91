import { once } from 'node:events'
import { mkdir, stat, writeFile } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import readline from 'node:readline'
import t from 'tap'
import { ada } from '../routes/students/fixtures.js'
import { tempDataDir, within } from '../helper.js'
import { embeddedEnv, listeningWorkers, sleep, slowPost, spawnServer, startServer } from './process.js'

t.test('npm start: embedded PostgreSQL, graceful SIGTERM, data kept across restarts', async t => {
  const dataDir = await tempDataDir(t, 'students-server-')

  const first = await startServer(embeddedEnv(dataDir))
  t.teardown(() => first.kill())
  const createdAdmin = first.logs.find(entry => entry.msg === 'created the administrator: this password is shown once only')
  t.match(createdAdmin, { email: 'admin@example.com', password: String }, 'the generated admin password is printed')
  const adminLogin = await fetch(`${first.url}/api/login`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'admin@example.com', password: createdAdmin!.password })
  })
  t.equal(adminLogin.status, 200, 'and works')
  const token = ((await adminLogin.json()) as { data: string }).data
  const created = await fetch(`${first.url}/students`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ada)
  })
  t.equal(created.status, 201)
  const student = await created.json() as { id: number }

  const exited = once(first.process, 'exit')
  const answer = await slowPost(`${first.url}/api/v1/students`, JSON.stringify({ ...ada, email: 'late@example.com' }), async () => {
    await sleep(200)
    first.process.kill('SIGTERM')
    await sleep(300)
  })
  t.equal(answer.status, 201, 'the request in flight at SIGTERM is answered')
  const [code] = await exited
  t.equal(code, 0, 'exits cleanly')
  t.ok(first.logs.some(entry => entry.msg === 'shutting down: finishing in-flight requests'))
  await t.rejects(stat(path.join(dataDir, 'postgres', 'postmaster.pid')), 'the embedded database is stopped')

  // Restarted with two workers: the primary runs the embedded database for both.
  const second = await startServer({ ...embeddedEnv(dataDir), WORKERS: '2' })
  t.teardown(() => second.kill())
  t.notOk(second.logs.some(entry => entry.msg === 'created the administrator: this password is shown once only'), 'printed once only')
  // As in the other tests of workers: both running before the first request.
  t.ok(await within(60_000, () => listeningWorkers(second).length === 2), 'both workers listen')
  // A worker that cannot start says why in the log only (in CI, once: Fastify's time limit for plugins).
  t.teardown(() => {
    if (t.passing()) return
    for (const entry of second.logs) if (Number(entry.level) >= 40) t.comment(JSON.stringify(entry))
  })
  const profile = await fetch(`${second.url}/api/profile`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(profile.status, 200, 'a token of the first run holds after the restart: the JWT secret generated in DATA_DIR was kept, and the workers read it')
  const again = await fetch(`${second.url}/students/${student.id}`)
  t.same(await again.json(), student, 'data survives the restart')
  const list = await (await fetch(`${second.url}/students`)).json() as unknown[]
  t.equal(list.length, 2, 'the request answered during shutdown was kept')
  second.process.kill('SIGTERM')
  t.equal((await once(second.process, 'exit'))[0], 0)
  await t.rejects(stat(path.join(dataDir, 'postgres', 'postmaster.pid')), 'the embedded database is stopped again')
})

t.test('a second server on the same DATA_DIR exits at once with a message; the first keeps serving', async t => {
  const dataDir = await tempDataDir(t, 'students-server-')
  const first = await startServer(embeddedEnv(dataDir))
  t.teardown(() => first.kill())
  const port = new URL(first.url).port
  const startLogs = first.logs.length

  // As a new user would: `npm start` again, on the same port, then on another.
  for (const env of [{ PORT: port }, { PORT: '0' }]) {
    const child = spawnServer({ ...embeddedEnv(dataDir), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...env })
    let out = ''
    child.stdout!.on('data', chunk => { out += chunk })
    const [code] = await once(child, 'exit')
    t.equal(code, 1, `PORT=${env.PORT}: exits 1`)
    t.match(out, new RegExp(`The data folder ${dataDir} is in use by another server \\(pid ${first.process.pid}\\)`), 'and says why')
  }
  await sleep(1_000)
  const ready = await fetch(`${first.url}/health/ready`)
  t.equal(ready.status, 200, 'the first server still reaches its database')
  t.same(first.logs.slice(startLogs).filter(entry => Number(entry.level) >= 40), [], 'and has nothing to warn of')

  // A claim whose process is gone is taken over: the first killed outright, its database left running.
  first.process.kill('SIGKILL')
  await once(first.process, 'exit')
  const next = await startServer(embeddedEnv(dataDir))
  t.teardown(() => next.kill())
  t.equal((await fetch(`${next.url}/health/ready`)).status, 200, 'a new server starts after one that was killed')
  next.process.kill('SIGTERM')
  t.equal((await once(next.process, 'exit'))[0], 0)
})

t.test('a port in use stops start-up and the embedded database with it', async t => {
  const dataDir = await tempDataDir(t, 'students-server-')
  const blocker = net.createServer().listen(0, '127.0.0.1')
  await once(blocker, 'listening')
  t.teardown(() => blocker.close())

  const port = (blocker.address() as net.AddressInfo).port
  const child = spawnServer({ ...embeddedEnv(dataDir), PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info' })
  let out = ''
  child.stdout!.on('data', chunk => { out += chunk })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(out, /EADDRINUSE.*"msg":"could not start"/)
  await t.rejects(stat(path.join(dataDir, 'postgres', 'postmaster.pid')), 'the embedded database is stopped')
})

t.test('an embedded database that cannot start stops start-up with its error, one process or several', async t => {
  const dataDir = await tempDataDir(t, 'students-server-')
  // A data folder PostgreSQL cannot use: it has a version file and nothing else.
  await mkdir(path.join(dataDir, 'postgres'), { mode: 0o777 })
  await writeFile(path.join(dataDir, 'postgres', 'PG_VERSION'), '18\n')

  for (const workers of ['1', '2']) {
    const child = spawnServer({ ...embeddedEnv(dataDir), WORKERS: workers, PORT: '0', LOG_LEVEL: 'info' })
    const lines: Record<string, unknown>[] = []
    readline.createInterface({ input: child.stdout! }).on('line', line => lines.push(JSON.parse(line)))
    const [code] = await once(child, 'exit')
    t.equal(code, 1, `WORKERS=${workers}: exits 1`)
    const fatal = lines.find(entry => entry.msg === 'could not start')
    t.match(fatal, { level: 60, err: { message: /pg_ctl start/ } }, `WORKERS=${workers}: says why, in the log`)
  }
})
