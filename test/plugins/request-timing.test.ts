import { once } from 'node:events'
import http from 'node:http'
import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import app, { serverOptions } from '../../app.js'
import { createDatabase, testConfig } from '../helper.js'

// Wide apart, so that a busy machine's stalls cannot blur them.
const TIMEOUT_MS = 1_000
const SLOW_HANDLER_MS = TIMEOUT_MS * 4
const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** The app with HANDLER_TIMEOUT at 1 s and routes of its own, listening on 127.0.0.1; its log lines collected. */
async function listening (t: Test, slowRequest = 1_000) {
  const db = testConfig(await createDatabase(t), { logLevel: 'info' })
  const config = { ...db, timeouts: { ...db.timeouts, handler: TIMEOUT_MS, slowRequest } }
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
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => fastify.close())
  const { port } = fastify.server.address() as { port: number }
  return { port, logs, lateAnswers: () => lateAnswers }
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
  t.same(res.body, { success: false, statusCode: 503, error: 'Service Unavailable', message: 'The request took too long; try again later' })
  t.ok(res.ms >= TIMEOUT_MS && res.ms < SLOW_HANDLER_MS, `answered after ${res.ms} ms, not when the handler finished`)
  t.ok(logs.some(line => line.msg === 'request timed out' && line.level === 50), 'logged as an error')

  await sleep(SLOW_HANDLER_MS - res.ms + 100)
  t.equal(lateAnswers(), 1, 'the handler ran to its end')
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
