import { once } from 'node:events'
import { createServer, type Server } from 'node:http'
import { connect, type AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import Fastify from 'fastify'
import t, { type Test } from 'tap'
import app, { serverOptions } from '../../../app.js'
import { build, createDatabase, testConfig } from '../../helper.js'
import { ada } from '../../routes/students/fixtures.js'

/** A span as OTLP/HTTP's JSON has it, with its attributes as a plain object. */
interface ReceivedSpan {
  traceId: string
  spanId: string
  parentSpanId?: string
  name: string
  kind: number
  status?: { code?: number }
  attributes: Record<string, unknown>
}

const SERVER = 2
const CLIENT = 3
const INTERNAL = 1
const STATUS_ERROR = 2

interface OtlpValue { stringValue?: string, intValue?: string | number, boolValue?: boolean }
interface OtlpBody {
  resourceSpans: {
    resource: { attributes: { key: string, value: OtlpValue }[] }
    scopeSpans: { spans: (Omit<ReceivedSpan, 'attributes'> & { attributes?: { key: string, value: OtlpValue }[] })[] }[]
  }[]
}

const valueOf = (value: OtlpValue) => value.stringValue ?? (value.intValue === undefined ? value.boolValue : Number(value.intValue))

/** A collector of its own: the spans POSTed to /v1/traces, and the service names they came from. */
async function receiver (t: Test): Promise<{ endpoint: string, spans: ReceivedSpan[], services: Set<unknown> }> {
  const spans: ReceivedSpan[] = []
  const services = new Set<unknown>()
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      if (request.method === 'POST' && request.url === '/v1/traces') {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as OtlpBody
        for (const { resource, scopeSpans } of body.resourceSpans) {
          services.add(valueOf(resource.attributes.find(attribute => attribute.key === 'service.name')!.value))
          for (const { spans: list } of scopeSpans) {
            for (const span of list) {
              spans.push({ ...span, attributes: Object.fromEntries((span.attributes ?? []).map(({ key, value }) => [key, valueOf(value)])) })
            }
          }
        }
      }
      response.writeHead(200, { 'content-type': 'application/json' }).end('{}')
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => new Promise(resolve => server.close(resolve)))
  return { endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/traces`, spans, services }
}

const CALLER_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const CALLER_SPAN = '00f067aa0ba902b7'
const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/

t.test('with tracing on, a request is a SERVER span under the caller\'s, with its SQL and hashing under it', async t => {
  const collector = await receiver(t)
  const app = await build(t, {
    tracing: { endpoint: collector.endpoint, serviceName: 'records-under-test' },
    corsOrigins: ['https://app.example.com']
  })
  const { id } = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json<{ id: number }>()

  const read = await app.inject({ method: 'GET', url: `/students/${id}?fields=ignored`, headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, 'x-request-id': 'trace-me-1' } })
  t.equal(read.statusCode, 200)
  const [, traceId, spanId] = TRACEPARENT.exec(read.headers.traceparent as string) ?? []
  t.equal(traceId, CALLER_TRACE, 'the answer\'s traceparent is of the caller\'s trace')

  const login = await app.inject({ method: 'POST', url: '/api/login', payload: { email: 'nobody@example.com', password: 'wrong password' } })
  t.equal(login.statusCode, 401)
  const loginTrace = TRACEPARENT.exec(login.headers.traceparent as string)![1]
  t.not(loginTrace, CALLER_TRACE, 'without a traceparent, a trace of its own')

  const register = await app.inject({ method: 'POST', url: '/api/register', payload: { name: 'Grace', email: 'grace@example.com', password: 'a long password', c_password: 'a long password' } })
  t.equal(register.statusCode, 201)
  const registerTrace = TRACEPARENT.exec(register.headers.traceparent as string)![1]

  t.equal((await app.inject({ method: 'GET', url: '/no/such/route' })).statusCode, 404)
  const preflight = await app.inject({ method: 'OPTIONS', url: '/students', headers: { origin: 'https://app.example.com', 'access-control-request-method': 'POST' } })
  t.equal(preflight.statusCode, 204)

  await app.knex.raw('alter table students rename to students_gone')
  const failed = await app.inject({ method: 'GET', url: `/students/${id}` })
  t.equal(failed.statusCode, 500)

  // Closing flushes the spans not yet sent.
  await app.close()
  const { spans } = collector
  t.same([...collector.services], ['records-under-test'])

  const servers = spans.filter(span => span.kind === SERVER && span.traceId === CALLER_TRACE)
  t.equal(servers.length, 1, 'one SERVER span in the caller\'s trace')
  const server = servers[0]!
  t.match(server, {
    name: 'GET /students/:id',
    spanId,
    parentSpanId: CALLER_SPAN,
    attributes: {
      'http.request.method': 'GET',
      'http.route': '/students/:id',
      'url.path': `/students/${id}`,
      'http.response.status_code': 200,
      'http.request.id': 'trace-me-1'
    }
  })
  t.not(server.status?.code, STATUS_ERROR)

  const sql = spans.filter(span => span.parentSpanId === server.spanId)
  t.ok(sql.length >= 1, 'the SQL that read the student is a span under the request\'s')
  t.match(sql[0], { kind: CLIENT, traceId: CALLER_TRACE, attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'SELECT', 'db.query.text': /from "?students"?/i } })

  const loginServer = spans.find(span => span.kind === SERVER && span.traceId === loginTrace)!
  t.equal(loginServer.name, 'POST /api/login')
  t.match(spans.find(span => span.parentSpanId === loginServer.spanId && span.name === 'passwords.verify'), { kind: INTERNAL }, 'the password check is a span of its own')

  const registerServer = spans.find(span => span.kind === SERVER && span.traceId === registerTrace)!
  const registerChildren = spans.filter(span => span.parentSpanId === registerServer.spanId)
  t.match(registerChildren.find(span => span.name === 'passwords.hash'), { kind: INTERNAL }, 'the password hashed is a span of its own')
  t.match(registerChildren.find(span => span.name.startsWith('knex ')), { kind: CLIENT, attributes: { 'db.system.name': 'postgresql' } }, 'knex\'s queries too')

  t.match(spans.find(span => span.kind === SERVER && span.attributes['http.response.status_code'] === 404), { name: 'GET', attributes: { 'url.path': '/no/such/route' } }, 'a request of no route: its method alone')
  t.notOk(spans.find(span => span.attributes['http.request.method'] === 'OPTIONS'), 'a preflight answered before its span started has none')

  const failure = spans.find(span => span.kind === SERVER && span.attributes['http.response.status_code'] === 500)!
  t.equal(failure.status?.code, STATUS_ERROR, 'a 5xx is an error')
  t.match(spans.find(span => span.parentSpanId === failure.spanId), { kind: CLIENT, status: { code: STATUS_ERROR } }, 'so is the SQL that failed')
})

t.test('a request whose client goes away before the answer still ends its span, as an error', async t => {
  const collector = await receiver(t)
  const app = await build(t, { tracing: { endpoint: collector.endpoint, serviceName: 'records-under-test' } })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  // Half a body, then the connection closed: the handler never runs, and no answer is sent.
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write('POST /students HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\nX-Request-Id: gone-early\r\n\r\n{"name":')
  await new Promise(resolve => setTimeout(resolve, 200))
  socket.destroy()
  await new Promise(resolve => setTimeout(resolve, 200))
  await app.close()

  const span = collector.spans.find(span => span.attributes['http.request.id'] === 'gone-early')
  t.ok(span, 'the span was sent')
  t.equal(span?.name, 'POST /students')
  t.equal(span?.status?.code, STATUS_ERROR)
  t.notOk(span && 'http.response.status_code' in span.attributes, 'with no status code: nothing was answered')
})

t.test('a traced request\'s log lines carry its trace id', async t => {
  const collector = await receiver(t)
  const config = testConfig(await createDatabase(t), { logLevel: 'info', tracing: { endpoint: collector.endpoint, serviceName: 'student-records-api' } })
  const options = serverOptions(config)
  const logs: { msg: string, reqId?: string, traceId?: string }[] = []
  const stream = new Writable({ write (line, _encoding, done) { logs.push(JSON.parse(String(line))); done() } })
  const fastify = Fastify({ ...options, logger: { ...options.logger as object, stream } })
  await fastify.register(app, { config })
  fastify.get('/broken', async () => { throw new Error('a bug') })
  await fastify.ready()
  t.teardown(() => fastify.close())
  const res = await fastify.inject({ url: '/broken', headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01`, 'x-request-id': 'logged-1' } })
  t.equal(res.statusCode, 500)
  const lines = logs.filter(line => line.reqId === 'logged-1')
  t.ok(lines.some(line => line.msg === 'request failed'))
  t.ok(lines.every(line => line.traceId === CALLER_TRACE), 'every line of the request carries its trace id')
})

t.test('with tracing off, nothing is sent and the answer has no traceparent', async t => {
  const collector = await receiver(t)
  const app = await build(t)
  const { id } = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json<{ id: number }>()
  const read = await app.inject({ method: 'GET', url: `/students/${id}`, headers: { traceparent: `00-${CALLER_TRACE}-${CALLER_SPAN}-01` } })
  t.equal(read.statusCode, 200)
  t.notOk(read.headers.traceparent)
  await app.close()
  t.same(collector.spans, [])
})
