import { once } from 'node:events'
import net from 'node:net'
import path from 'node:path'
import { PassThrough } from 'node:stream'
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import service, { serverOptions } from '../../../app.js'
import { clientErrorHandler } from '../../../plugins/app/errors.js'
import { build, createDatabase, testConfig } from '../../helper.js'

/** Sends raw bytes to the app's port and reads the answer until the server closes or answers whole. */
function raw (app: FastifyInstance, request: string): Promise<{ status: number, headers: Record<string, string>, body: string }> {
  const { port } = app.server.address() as net.AddressInfo
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(request))
    let text = ''
    const done = () => {
      const [head = '', body = ''] = text.split('\r\n\r\n')
      const [statusLine = '', ...lines] = head.split('\r\n')
      const headers = Object.fromEntries(lines.map(line => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]))
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body })
    }
    socket.on('data', chunk => {
      text += chunk
      const length = /content-length: (\d+)/i.exec(text)?.[1]
      if (length !== undefined && text.includes('\r\n\r\n') && Buffer.byteLength(text.split('\r\n\r\n')[1]!) >= Number(length)) {
        socket.destroy()
        done()
      }
    })
    socket.on('close', () => { if (text) done() })
    socket.on('error', reject)
  })
}

const SECURITY = { 'x-content-type-options': 'nosniff', 'x-frame-options': 'DENY', 'content-security-policy': "default-src 'none'; frame-ancestors 'none'" }

t.test('what never reaches a route is answered in the error body with the security headers', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const cases: [string, string, number, string][] = [
    ['a malformed URL', 'GET /students/% HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed_url'],
    ['a malformed URL on a guarded route', 'GET /api/clients/%zz HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'malformed_url'],
    ['headers over the size limit', `GET /students HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'headers_too_large'],
    ['a URL over the size limit', `GET /students?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'headers_too_large'],
    ['Transfer-Encoding and Content-Length', 'POST /students HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'malformed_request'],
    ['not HTTP', 'HELLO\r\n\r\n', 400, 'malformed_request']
  ]
  for (const [label, request, status, code] of cases) {
    const res = await raw(app, request)
    t.equal(res.status, status, label)
    t.match(res.headers, { ...SECURITY, 'content-type': /^application\/json/ }, `${label}: the security headers`)
    const body = JSON.parse(res.body)
    t.same(Object.keys(body).sort(), ['code', 'error', 'message', 'statusCode', 'success'], `${label}: the error body and nothing else`)
    t.match(body, { success: false, statusCode: status, error: String, code, message: String }, label)
    t.notMatch(res.body, /FST_|HPE_|ERR_/, `${label}: no internal code name`)
  }
})

t.test('CONNECT is answered as any method no route serves, in the error body, and the connection closed', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.equal((await raw(app, 'TRACE /nowhere HTTP/1.1\r\nHost: x\r\n\r\n')).status, 404, 'TRACE, another method no route serves')
  for (const target of ['/students', 'example.com:443']) {
    const { port } = app.server.address() as net.AddressInfo
    const socket = net.connect(port, '127.0.0.1', () => socket.write(`CONNECT ${target} HTTP/1.1\r\nHost: x\r\n\r\n`))
    let text = ''
    socket.on('data', chunk => { text += chunk })
    await once(socket, 'close')
    const [head = '', body = ''] = text.split('\r\n\r\n')
    t.match(head, /^HTTP\/1\.1 404 Not Found\r\n/, target)
    t.match(head, /\r\nconnection: close(\r\n|$)/)
    t.match(head, /\r\nx-content-type-options: nosniff\r\n/)
    t.same(JSON.parse(body), { success: false, statusCode: 404, error: 'Not Found', code: 'route_not_found', message: `Route CONNECT ${target} not found` })
  }
})

// Routes of these tests only: writes a foreign key refuses, a read of a missing file.
const FAULT_ROUTES = path.join(import.meta.dirname, 'errors-routes')

t.test('a foreign key refusing a change: 409 naming the table that refers, and nothing of the constraint', async t => {
  const app = await build(t, {}, { routes: FAULT_ROUTES })
  await app.knex.schema.createTable('fault_parents', table => { table.increments('id') })
  await app.knex.schema.createTable('fault_children', table => {
    table.increments('id')
    table.integer('parent_id').notNullable().references('fault_parents.id')
  })
  await app.knex('fault_parents').insert([{ id: 1 }, { id: 2 }])
  await app.knex('fault_children').insert({ parent_id: 1 })

  const referred = await app.inject({ method: 'DELETE', url: '/faults/parents/1' })
  t.equal(referred.statusCode, 409, 'a record still referred to')
  t.same(referred.json(), { success: false, statusCode: 409, error: 'Conflict', code: 'referenced', message: 'The record is still referred to by fault_children; change or remove those first' })
  const missing = await app.inject({ method: 'POST', url: '/faults/children', payload: { parent_id: 99 } })
  t.equal(missing.statusCode, 409, 'a reference to a record that does not exist')
  t.same(missing.json(), { success: false, statusCode: 409, error: 'Conflict', code: 'missing_reference', message: 'The record refers to one that does not exist' })
  for (const res of [referred, missing]) t.notMatch(res.body, /fkey|foreign|Key \(|parent_id|99/, 'no constraint, column or key value')

  t.equal((await app.inject({ method: 'DELETE', url: '/faults/parents/2' })).statusCode, 204, 'a record nothing refers to is deleted')
  t.same(await app.knex('fault_parents').pluck('id'), [1], 'the one referred to is kept')
})

t.test('a missing file is the server\'s fault (500), not the database\'s (503)', async t => {
  const app = await build(t, {}, { routes: FAULT_ROUTES })
  const res = await app.inject({ url: '/faults/file' })
  t.equal(res.statusCode, 500)
  t.equal(res.headers['retry-after'], undefined, 'no Retry-After: retrying will not help')
  t.same(res.json(), { success: false, statusCode: 500, error: 'Internal Server Error', code: 'internal_error', message: 'The server failed to answer this request' })
  t.notMatch(res.body, /ENOENT|not-there/, 'nothing of the cause')
})

t.test('headers not received within REQUEST_TIMEOUT: 408 in the error body, and the connection closed', async t => {
  // Node's HTTP server checks its request timeouts every 30 s: the handler is given the error itself.
  const app = await build(t)
  const socket = new PassThrough()
  let written = ''
  socket.on('data', chunk => { written += chunk })
  socket.on('error', () => {})
  clientErrorHandler.call(app, Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket)
  const [head = '', body = ''] = written.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 408 Request Timeout\r\n/)
  t.match(head, /\r\nconnection: close(\r\n|$)/)
  t.match(head, /\r\nx-content-type-options: nosniff\r\n/)
  t.same(JSON.parse(body), { success: false, statusCode: 408, error: 'Request Timeout', code: 'request_timeout', message: 'The request was not received in time' })
  t.ok(socket.destroyed, 'closed')
})

t.test('a CORS preflight without Access-Control-Request-Method: 400 in the error body', async t => {
  const app = await build(t, { corsOrigins: ['https://app.example.com'] })
  for (const headers of [{ origin: 'https://app.example.com' }, { 'access-control-request-method': 'GET' }, {}]) {
    const res = await app.inject({ method: 'OPTIONS', url: '/students', headers })
    t.equal(res.statusCode, 400, JSON.stringify(headers))
    t.match(res.headers, SECURITY)
    t.match(res.json(), { success: false, statusCode: 400, error: 'Bad Request', message: /Access-Control-Request-Method/ })
  }
})

t.test('a request that arrives while the service closes: 503 in the error body, Retry-After, Connection: close', async t => {
  const config = testConfig(await createDatabase(t))
  const app = Fastify(serverOptions(config))
  await app.register(service, { config })
  let release!: () => void
  const held = new Promise<void>(resolve => { release = resolve })
  let closing!: () => void
  const reached = new Promise<void>(resolve => { closing = resolve })
  app.addHook('preClose', async () => {
    closing()
    await held
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  t.teardown(() => { release() })

  // A keep-alive connection, open before closing begins; the preClose hooks run in order: the
  // service's first, then this one, which holds the close until the request below is answered.
  const socket = net.connect((app.server.address() as net.AddressInfo).port, '127.0.0.1')
  const answers: string[] = []
  let waiting: (() => void) | undefined
  socket.on('data', chunk => { answers.push(String(chunk)); waiting?.() })
  const ask = () => new Promise<string>(resolve => {
    const count = answers.length
    waiting = () => { if (answers.length > count) resolve(answers.slice(count).join('')) }
    socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n')
  })
  t.match(await ask(), /^HTTP\/1\.1 200/, 'served before closing')
  const closed = app.close()
  await reached
  const answer = await ask()
  release()
  await closed
  socket.destroy()
  const [head = '', body = ''] = answer.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 503/)
  t.match(head, /\r\nretry-after: 5\r\n/i)
  t.match(head, /\r\nconnection: close\r\n/i)
  t.match(head, /\r\nx-content-type-options: nosniff\r\n/i)
  t.match(JSON.parse(body), { success: false, statusCode: 503, error: 'Service Unavailable' })
})
