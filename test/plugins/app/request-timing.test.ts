import { once } from 'node:events'
import http from 'node:http'
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import net from 'node:net'
import Fastify from 'fastify'
import pg from 'pg'
import app, { serverOptions } from '../../../app.js'
import { buildApp, createDatabase, testConfig, within } from '../../helper.js'
import { bearer, client, userWithRoles } from '../../routes/api/accounts.js'

// Wide apart, so that a busy machine's stalls cannot blur them.
const TIMEOUT_MS = 1_000
const SLOW_HANDLER_MS = TIMEOUT_MS * 4
const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** The app with HANDLER_TIMEOUT at 1 s and routes of its own, listening on 127.0.0.1; its log lines collected. */
async function listening (t: Test, slowRequest = 1_000, dbStatement?: number) {
  const db = testConfig(await createDatabase(t), { logLevel: 'info' })
  const config = { ...db, timeouts: { ...db.timeouts, handler: TIMEOUT_MS, slowRequest, dbStatement: dbStatement ?? db.timeouts.dbStatement } }
  const options = serverOptions(config)
  const logs: { msg: string, level: number, statusCode?: number, responseTime?: number, url?: string }[] = []
  const stream = new Writable({ write (line, _encoding, done) { logs.push(JSON.parse(String(line))); done() } })
  const fastify = Fastify({ ...options, logger: { ...options.logger as object, stream } })
  await fastify.register(app, { config })
  let lateAnswers = 0
  fastify.get('/slow', async () => {
    await sleep(SLOW_HANDLER_MS)
    lateAnswers++
    return { late: true }
  })
  fastify.get('/leisurely', async () => {
    await sleep(TIMEOUT_MS / 2)
    return { leisurely: true }
  })
  fastify.get('/quick', async () => ({ quick: true }))
  let lateWrites = 0
  fastify.post('/slow-write', async (request) => {
    await sleep(SLOW_HANDLER_MS)
    await request.guardWrite(async () => { lateWrites++ })
    return { written: true }
  })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const { port } = fastify.server.address() as { port: number }
  return { fastify, port, logs, config, lateAnswers: () => lateAnswers, lateWrites: () => lateWrites }
}

/** One request on the agent's connections; the answer with its body. */
async function get (port: number, path: string, agent: http.Agent) {
  const started = Date.now()
  const req = http.get({ host: '127.0.0.1', port, path, agent })
  const [res] = await once(req, 'response') as [http.IncomingMessage]
  let body = ''
  for await (const chunk of res) body += chunk
  return { status: res.statusCode, headers: res.headers, body: JSON.parse(body), ms: Date.now() - started, socket: req.socket }
}

t.test('a handler slower than HANDLER_TIMEOUT: 503 with Retry-After when the time is up, and its late answer is dropped', async t => {
  const { port, logs, lateAnswers } = await listening(t)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())

  const res = await get(port, '/slow', agent)
  t.equal(res.status, 503)
  t.equal(res.headers['retry-after'], '5')
  t.same(res.body, { success: false, statusCode: 503, error: 'Service Unavailable', code: 'unavailable', message: 'The request took too long; try again later' })
  t.ok(res.ms >= TIMEOUT_MS && res.ms < SLOW_HANDLER_MS, `answered after ${res.ms} ms, not when the handler finished`)
  t.ok(logs.some(line => line.msg === 'request timed out' && line.level === 40), 'logged as a warning, as a 503 is')

  // Its end comes SLOW_HANDLER_MS after it began; a loaded machine's timers may fire later.
  t.ok(await within(SLOW_HANDLER_MS * 10, () => lateAnswers() === 1), 'the handler ran to its end')
  const next = await get(port, '/quick', agent)
  t.same([next.status, next.body], [200, { quick: true }], 'the same connection serves the next request')
  t.equal(next.socket, res.socket, 'kept alive')
})

t.test('a handler that answers in time is not touched, however long the connection stays open after', async t => {
  const { port, logs } = await listening(t)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())

  const first = await get(port, '/quick', agent)
  t.same([first.status, first.body], [200, { quick: true }])
  await sleep(TIMEOUT_MS * 2)
  const second = await get(port, '/students?limit=1', agent)
  t.same([second.status, second.body], [200, []])
  t.equal(second.socket, first.socket, 'one connection throughout')
  t.same(logs.filter(line => line.level >= 40), [], 'no warning or error logged')
})

t.test('a client that leaves before the time is up gets nothing written after it', async t => {
  const { port, logs, lateAnswers } = await listening(t)
  const req = http.get({ host: '127.0.0.1', port, path: '/slow', agent: false })
  req.on('error', () => {})
  await sleep(TIMEOUT_MS / 3)
  req.destroy()
  await sleep(SLOW_HANDLER_MS)
  t.equal(lateAnswers(), 1, 'the handler ran to its end')
  t.notOk(logs.some(line => line.msg === 'request timed out'), 'no answer was attempted on the closed connection')
})

t.test('a request answered slower than SLOW_REQUEST is logged once, as a warning; a quick one is not', async t => {
  const { port, logs } = await listening(t, TIMEOUT_MS / 4)
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
  t.teardown(() => agent.destroy())

  t.equal((await get(port, '/quick', agent)).status, 200)
  t.equal((await get(port, '/leisurely?page=2', agent)).status, 200)
  await sleep(50)
  const slow = logs.filter(line => line.msg === 'slow request')
  t.equal(slow.length, 1, 'one line')
  t.match(slow[0], { level: 40, url: '/leisurely?page=2', statusCode: 200 })
  t.ok(slow[0]!.responseTime! >= TIMEOUT_MS / 4, `with its time: ${slow[0]!.responseTime} ms`)
})

/** A POST of `body` sent in two parts: the first at once, the rest after `between` (or never: the socket is destroyed). */
function dripped (port: number, body: string, between: () => Promise<'send' | 'leave'>) {
  return new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST /students HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 5)}`)
      between().then(next => { if (next === 'send') socket.write(body.slice(5)); else socket.destroy() }, reject)
    })
    let answer = ''
    socket.on('data', chunk => { answer += chunk })
    socket.on('close', () => resolve(answer))
    socket.on('error', () => resolve(answer))
  })
}

const student = JSON.stringify({ name: 'Ada', email: 'ada@example.com', age: 36, dob: '1815-12-10' })

t.test('a body dripped slower than HANDLER_TIMEOUT: 408 in the error body, the connection closed, logged at info', async t => {
  const { port, logs } = await listening(t)
  const answer = await dripped(port, student, async () => { await sleep(TIMEOUT_MS * 2); return 'send' })
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 408 /)
  t.match(head, /\r\nconnection: close/i)
  t.match(JSON.parse(body), { success: false, statusCode: 408, error: 'Request Timeout', message: /not received within/ })
  await sleep(100)
  t.same(logs.filter(line => line.level >= 50).map(line => line.msg), [], 'no error logged: the client\'s fault')
  t.ok(logs.some(line => line.level === 30 && line.msg === 'request refused'), 'logged at info')
})

t.test('a client that disconnects mid-body is logged at info, not as a database error', async t => {
  const { port, logs } = await listening(t)
  await dripped(port, student, async () => { await sleep(100); return 'leave' })
  await sleep(300)
  t.same(logs.filter(line => line.level >= 40).map(line => line.msg), [], 'no warning or error')
  t.ok(logs.some(line => line.level === 30 && /closed the connection/.test(line.msg)), 'an info line says the client left')
})

/** Holds the students table (or these tables) in another session until `ms` have passed; resolves then. */
async function holdStudents (t: Test, db: pg.ClientConfig, ms: number, tables = 'students') {
  const holder = new pg.Client(db)
  await holder.connect()
  t.teardown(() => holder.end())
  await holder.query('begin')
  await holder.query(`lock table ${tables} in access exclusive mode`)
  return { holder, released: sleep(ms).then(() => holder.query('commit')) }
}

function postStudent (port: number) {
  return new Promise<{ status: number, body: string, headers: http.IncomingHttpHeaders }>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/students', method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, res => {
      let body = ''
      res.on('data', chunk => { body += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, body, headers: res.headers }))
    })
    req.on('error', reject)
    req.end(student)
  })
}

t.test('a write cut short by DB_STATEMENT_TIMEOUT: 503 with Retry-After, nothing written', async t => {
  const { port, config, logs } = await listening(t, 1_000, TIMEOUT_MS / 4)
  const { holder, released } = await holdStudents(t, config.db!, TIMEOUT_MS)
  const res = await postStudent(port)
  await released
  t.equal(res.status, 503)
  t.equal(res.headers['retry-after'], '5')
  t.match(JSON.parse(res.body), { success: false, statusCode: 503, message: 'The database is busy; try again later' })
  t.equal((await holder.query('select count(*)::int as n from students')).rows[0].n, 0, 'no row')
  t.notOk(logs.some(line => line.msg === 'request failed'), 'not a 500')
})

t.test('a create with an Idempotency-Key cut short by DB_STATEMENT_TIMEOUT: 503, nothing written, and the key free to retry', async t => {
  const { port, config, logs } = await listening(t, 1_000, TIMEOUT_MS / 4)
  // The admin is made through an app on the same database with the tests' usual limits: a busy
  // machine's setup statement, or its login's hash, must not be what the short ones cut.
  const admin = await userWithRoles(await buildApp(t, testConfig(config.db!)), ['Admin'])
  const creates = [
    { path: '/students', headers: {}, body: student },
    { path: '/api/clients', headers: bearer(admin.token), body: JSON.stringify(client) }
  ]
  const post = ({ path, headers, body }: typeof creates[number]) =>
    fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', 'idempotency-key': 'cut-short' }, body })
  const { holder, released } = await holdStudents(t, config.db!, TIMEOUT_MS, 'students, clients')
  // Both at once, well inside the hold: one after the other, a slow machine could let the
  // hold end before the second.
  const answers = await Promise.all(creates.map(post))
  for (const [i, res] of answers.entries()) {
    t.equal(res.status, 503, creates[i]!.path)
    t.match(await res.json(), { success: false, statusCode: 503, message: 'The database is busy; try again later' })
  }
  await released
  t.same((await holder.query('select (select count(*)::int from students) as students, (select count(*)::int from clients) as clients, (select count(*)::int from idempotency_keys) as keys')).rows[0], { students: 0, clients: 0, keys: 0 }, 'no row, no key')
  t.notOk(logs.some(line => line.msg === 'request failed'), 'not a 500')
  for (const create of creates) t.equal((await post(create)).status, 201, `${create.path}: the retry creates`)
})

t.test('the time limit never answers 503 over a write that then commits', async t => {
  const { port, config } = await listening(t)
  // Another session holds the table, so that the INSERT waits past HANDLER_TIMEOUT.
  const { holder, released } = await holdStudents(t, config.db!, TIMEOUT_MS * 2.5)
  const started = Date.now()
  const res = await postStudent(port)
  await released
  const { rows } = await holder.query('select count(*)::int as n from students')
  t.equal(res.status, 201, `the write's own answer, after ${Date.now() - started} ms: not a 503 followed by its commit`)
  t.equal(rows[0].n, 1, 'one row, as the 201 says')
})

t.test('once the time limit has answered 503, the request\'s write does not happen', async t => {
  const { port, lateWrites } = await listening(t)
  const res = await new Promise<number>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/slow-write', method: 'POST' }, res => { res.resume(); resolve(res.statusCode!) })
    req.on('error', reject)
    req.end()
  })
  t.equal(res, 503)
  await sleep(SLOW_HANDLER_MS)
  t.equal(lateWrites(), 0, 'the write after the 503 never ran')
})
