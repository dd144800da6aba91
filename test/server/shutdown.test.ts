import { once } from 'node:events'
import http from 'node:http'
import t from 'tap'
import pg from 'pg'
import { databaseEnv, sleep, startServer } from './process.js'
import { writeUntilRefused, writtenStudents } from './writers.js'

t.test('SIGTERM gives up on a request that never finishes, after the grace period', async t => {
  const server = await startServer(await databaseEnv(t))
  t.teardown(() => server.kill())
  const exited = once(server.process, 'exit')
  const started = Date.now()
  const req = http.request(`${server.url}/students`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': 100 } })
  req.on('error', () => {})
  req.write('{"name":')
  await sleep(200)
  server.process.kill('SIGTERM')
  await sleep(200)
  server.process.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 1)
  t.ok(Date.now() - started >= 10_000, 'waited for the grace period, a second SIGTERM notwithstanding')
  t.ok(server.logs.some(entry => entry.msg === 'in-flight requests did not finish in time'))
})

t.test('SIGTERM under load: requests in flight finish, later ones get 503, exit 0 within 10 s, every 201 kept', async t => {
  const env = await databaseEnv(t)
  const server = await startServer(env)
  t.teardown(() => server.kill())
  const created: number[] = []
  const other: string[] = []
  let n = 0
  let refused = 0
  // Ten clients on keep-alive connections, writing until the server has gone.
  const client = async () => {
    for (;;) {
      const res = await fetch(`${server.url}/students`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Busy', email: `busy${++n}@example.com`, age: 20, dob: '2000-01-01' })
      }).catch(() => undefined)
      if (!res) { refused++; return }
      if (res.status === 201) created.push(((await res.json()) as { id: number }).id)
      else if (res.status === 503) await res.arrayBuffer()
      else other.push(`${res.status} ${await res.text()}`)
    }
  }
  const load = Promise.all(Array.from({ length: 10 }, client))
  await sleep(1_000)
  const exited = once(server.process, 'exit')
  const started = Date.now()
  server.process.kill('SIGTERM')
  const [code] = await exited
  await load

  t.equal(code, 0)
  t.ok(Date.now() - started < 10_000, `exited in ${Date.now() - started} ms`)
  t.same(other, [], 'every answer was 201 or 503')
  t.equal(refused, 10, 'then connections were refused')
  t.ok(created.length > 0)
  const db = new pg.Client({ host: env.DB_HOST, port: Number(env.DB_PORT), database: env.DB_NAME, user: env.DB_USER, password: env.DB_PASSWORD })
  await db.connect()
  const { rows } = await db.query<{ id: number }>('select id from students where id = any($1)', [created])
  await db.end()
  t.equal(rows.length, created.length, 'every student answered 201 exists')
})

t.test('SIGTERM under 20 writers on keep-alive connections: every request sent on a kept-alive connection gets an answer, none is reset; every 201 is kept', async t => {
  const env = await databaseEnv(t)
  const server = await startServer(env)
  t.teardown(() => server.kill())
  const load = writeUntilRefused(server.url, 20)
  await sleep(1_500)
  const exited = once(server.process, 'exit')
  server.process.kill('SIGTERM')
  const [code] = await exited
  const { sent, created, unanswered, unexpected } = await load

  t.equal(code, 0)
  // At SHUTDOWN_DELAY 0 a writer may still open a connection as the listener closes: the
  // kernel resets it (the README says so). What must never happen is a request dropped on a
  // connection the server had kept open.
  t.same(unanswered, [], `none of ${sent} requests on a kept-alive connection was left without an answer`)
  t.same(unexpected, [], 'every answer was 201, or 503 with Retry-After and Connection: close')
  t.same(await writtenStudents(env), [...created].sort((a, b) => a - b), `every one of the ${created.length} students answered 201 exists, and nothing else`)
})

t.test('SHUTDOWN_DELAY: after SIGTERM /health/ready answers 503 at once while requests are still served, each closing its connection; then the process exits 0', async t => {
  const server = await startServer({ ...await databaseEnv(t), SHUTDOWN_DELAY: '1500ms' })
  t.teardown(() => server.kill())
  t.equal((await fetch(`${server.url}/health/ready`)).status, 200)
  // A keep-alive connection left idle, answered before SIGTERM: the drain closes it.
  const agent = new http.Agent({ keepAlive: true })
  t.teardown(() => agent.destroy())
  const idle = await new Promise<http.IncomingMessage>(resolve => http.get(`${server.url}/health/live`, { agent }, resolve))
  idle.resume()
  const idleClosed = once(idle.socket, 'close')
  const exited = once(server.process, 'exit')
  const signalled = Date.now()
  server.process.kill('SIGTERM')
  await sleep(300)
  const ready = await fetch(`${server.url}/health/ready`)
  t.equal(ready.status, 503, 'not ready')
  t.ok(ready.headers.get('retry-after'), 'with Retry-After')
  const served = await fetch(`${server.url}/students?limit=1`)
  t.equal(served.status, 200, 'still serving')
  t.equal(served.headers.get('connection'), 'close', 'closing each connection after its answer')
  const [code] = await exited
  t.equal(code, 0)
  t.ok(Date.now() - signalled >= 1_500, 'after the delay')
  await idleClosed
  t.pass('the idle keep-alive connection was closed')
})
