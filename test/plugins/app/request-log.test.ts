import { Writable } from 'node:stream'
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import app, { serverOptions } from '../../../app.js'
import { createDatabase, testConfig } from '../../helper.js'
import { bearer, client, userWithRoles } from '../../routes/api/accounts.js'

interface LogLine { msg: string, level: number, reqId?: string, err?: { stack?: string }, [field: string]: unknown }

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/** The app logging at debug into an array, with a route that throws. */
async function logged (t: Test) {
  const config = testConfig(await createDatabase(t), { logLevel: 'debug' })
  const options = serverOptions(config)
  const logs: LogLine[] = []
  const stream = new Writable({ write (line, _encoding, done) { logs.push(JSON.parse(String(line))); done() } })
  const fastify = Fastify({ ...options, logger: { ...options.logger as object, stream } })
  await fastify.register(app, { config })
  fastify.get('/broken/:part', async () => { throw new Error('a bug, with internals') })
  await fastify.ready()
  t.teardown(() => fastify.close())
  return { fastify, logs }
}

t.test('an X-Request-Id of 1 to 128 safe characters is kept: answered, and on every log line of the request', async t => {
  const { fastify, logs } = await logged(t)
  for (const id of ['abc.DEF_123-x', 'a'.repeat(128)]) {
    const res = await fastify.inject({ url: '/students/999999', headers: { 'x-request-id': id } })
    t.equal(res.statusCode, 404)
    t.equal(res.headers['x-request-id'], id, 'answered with it')
    const lines = logs.filter(line => line.reqId === id)
    t.ok(lines.length >= 1, 'its lines carry it')
    const refused = lines.find(line => line.msg === 'request refused')
    t.match(refused, { level: 30, method: 'GET', route: '/students/:id', url: '/students/999999', statusCode: 404, responseTime: Number })
    t.notOk(refused!.err, 'no stack trace for a refusal')
  }
})

t.test('any other X-Request-Id, or none, is replaced by a new UUID', async t => {
  const { fastify } = await logged(t)
  const ids = []
  for (const given of ['a'.repeat(129), 'has space', 'semi;colon', 'ünïcode', '', undefined]) {
    const res = await fastify.inject({ url: '/health/live', headers: given === undefined ? {} : { 'x-request-id': given } })
    t.match(res.headers['x-request-id'], UUID, `${JSON.stringify(given)}: a UUID`)
    ids.push(res.headers['x-request-id'])
  }
  t.equal(new Set(ids).size, ids.length, 'a new one each time')
})

t.test('a 500 is logged as an error naming its route, URL, status and time, with its cause beside it; the answer tells nothing of it', async t => {
  const { fastify, logs } = await logged(t)
  const res = await fastify.inject({ url: '/broken/one?x=1', headers: { 'x-request-id': 'bug-1' } })
  t.equal(res.statusCode, 500)
  t.notMatch(res.body, /internals/)
  const lines = logs.filter(line => line.reqId === 'bug-1')
  t.match(lines.find(line => line.msg === 'request failed'), { level: 50, method: 'GET', route: '/broken/:part', url: '/broken/one?x=1', statusCode: 500, responseTime: Number })
  t.match(lines.find(line => line.msg === 'unexpected error'), { level: 50, err: { stack: /a bug, with internals/ } })
})

t.test('a route that does not exist is logged at debug only; a slow or failed request only is logged, not one that went well', async t => {
  const { fastify, logs } = await logged(t)
  t.equal((await fastify.inject({ url: '/no/such/route', headers: { 'x-request-id': 'probe' } })).statusCode, 404)
  t.same(logs.filter(line => line.reqId === 'probe' && line.level >= 30).map(line => line.msg), [], 'nothing at info or above')
  t.match(logs.find(line => line.reqId === 'probe' && line.msg === 'no such route'), { level: 20, url: '/no/such/route', statusCode: 404 })
  t.equal((await fastify.inject({ url: '/students', headers: { 'x-request-id': 'fine' } })).statusCode, 200)
  t.same(logs.filter(line => line.reqId === 'fine' && line.level >= 30), [], 'a request that went well: no line at info or above')
})

t.test('the audit entry of a change carries the request\'s id, whole', async t => {
  const { fastify } = await logged(t)
  const admin = await userWithRoles(fastify, ['Admin'])
  const id = `audit-${'x'.repeat(100)}`
  const res = await fastify.inject({ method: 'POST', url: '/api/clients', payload: client, headers: { ...bearer(admin.token), 'x-request-id': id } })
  t.equal(res.statusCode, 201)
  const [entry] = await fastify.knex('audit_log').where({ action: 'create', resource: 'client' }).select('request_id')
  t.equal(entry.request_id, id)
})
