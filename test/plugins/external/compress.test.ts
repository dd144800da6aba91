import http from 'node:http'
import zlib from 'node:zlib'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../../helper.js'
import { ada, student } from '../../routes/students/fixtures.js'

interface Answer { status: number, headers: http.IncomingHttpHeaders, bytes: Buffer }

/** A request over HTTP whose answer is kept as the bytes that came, undecoded (fetch would decode them). */
function request (app: FastifyInstance, path: string, headers: Record<string, string> = {}, method = 'GET', body?: Buffer | string): Promise<Answer> {
  const { port } = app.server.address() as { port: number }
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, headers }, res => {
      const chunks: Buffer[] = []
      res.on('data', chunk => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes: Buffer.concat(chunks) }))
    }).on('error', reject)
    req.end(body)
  })
}

const decoders: Record<string, (bytes: Buffer) => Buffer> = {
  br: zlib.brotliDecompressSync,
  gzip: zlib.gunzipSync,
  deflate: zlib.inflateSync
}

/** A service listening on a port, with 40 students: a page of them is well past 1 KiB. */
async function serving (t: Parameters<typeof build>[0]): Promise<FastifyInstance> {
  const app = await build(t)
  for (let n = 0; n < 40; n++) await app.inject({ method: 'POST', url: '/students', payload: student(n) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}

t.test('the OpenAPI document and a list page come compressed as accepted, and decode to the same bytes', async t => {
  const app = await serving(t)
  for (const path of ['/documentation/json', '/students?limit=40', '/api/v1/students?limit=40&sort=-name&count=exact']) {
    const plain = await request(app, path)
    t.equal(plain.status, 200, path)
    t.equal(plain.headers['content-encoding'], undefined, `${path}: no Accept-Encoding, nothing encoded`)
    t.equal(plain.headers.vary, undefined)
    t.ok(plain.bytes.length > 1024, `${path}: past the threshold (${plain.bytes.length} bytes)`)
    for (const [encoding, decode] of Object.entries(decoders)) {
      const encoded = await request(app, path, { 'accept-encoding': encoding })
      t.equal(encoded.status, 200)
      t.equal(encoded.headers['content-encoding'], encoding, `${path}: ${encoding}`)
      t.match(encoded.headers.vary, /accept-encoding/i, 'Vary: Accept-Encoding')
      t.ok(encoded.bytes.length < plain.bytes.length, `${path}, ${encoding}: ${encoded.bytes.length} bytes against ${plain.bytes.length}`)
      t.same(decode(encoded.bytes), plain.bytes, `${path}, ${encoding}: decodes to the same body`)
      t.equal(encoded.headers['content-type'], plain.headers['content-type'])
      for (const header of ['etag', 'link', 'x-total-count']) t.equal(encoded.headers[header], plain.headers[header], `${path}: the same ${header}`)
    }
  }
  const preferred = await request(app, '/documentation/json', { 'accept-encoding': 'gzip, deflate, br' })
  t.equal(preferred.headers['content-encoding'], 'br', 'br first when several are accepted')
  const weighted = await request(app, '/documentation/json', { 'accept-encoding': 'br;q=0, gzip' })
  t.equal(weighted.headers['content-encoding'], 'gzip', 'not one the client refuses')
  for (const accepted of ['identity', 'compress', 'zstd']) {
    const other = await request(app, '/documentation/json', { 'accept-encoding': accepted })
    t.equal(other.status, 200, `${accepted}: answered`)
    t.equal(other.headers['content-encoding'], undefined, `${accepted}: as it is`)
  }
  const script = await request(app, '/documentation/static/swagger-ui-bundle.js', { 'accept-encoding': 'gzip' })
  t.equal(script.headers['content-encoding'], 'gzip', 'the documentation page\'s script too')
})

t.test('below 1 KiB nothing is compressed: a record, an error, a short page', async t => {
  const app = await serving(t)
  const created = await request(app, '/students', { 'content-type': 'application/json', 'accept-encoding': 'gzip' }, 'POST', JSON.stringify(ada))
  t.equal(created.status, 201)
  const id = JSON.parse(created.bytes.toString()).id as number
  const answers: [string, number][] = [
    [`/students/${id}`, 200],
    ['/students?limit=2', 200],
    ['/students/not-a-number', 400],
    ['/students/999999', 404],
    ['/health/live', 200]
  ]
  for (const [path, status] of answers) {
    const res = await request(app, path, { 'accept-encoding': 'gzip, br' })
    t.equal(res.status, status, path)
    t.equal(res.headers['content-encoding'], undefined, `${path}: not compressed`)
    t.ok(res.bytes.length < 1024, `${path}: ${res.bytes.length} bytes`)
    t.equal(res.headers['content-length'], String(res.bytes.length))
    if (status >= 400) t.match(JSON.parse(res.bytes.toString()), { success: false, statusCode: status, error: String, message: String }, `${path}: the error body`)
  }
  const record = await request(app, `/students/${id}`, { 'accept-encoding': 'gzip' })
  t.match(record.headers.etag, /^"/, 'a record keeps its strong tag')
})

t.test('a compressed list page\'s tag answers If-None-Match with 304, whichever coding it was read in; HEAD has no body', async t => {
  const app = await serving(t)
  const path = '/students?limit=40'
  const encoded = await request(app, path, { 'accept-encoding': 'gzip' })
  const etag = encoded.headers.etag!
  t.match(etag, /^W\//, 'a list page\'s tag is weak: the same page in any coding')
  for (const accepted of ['gzip', 'br', undefined]) {
    const res = await request(app, path, { 'if-none-match': etag, ...(accepted && { 'accept-encoding': accepted }) })
    t.equal(res.status, 304, `${accepted ?? 'no Accept-Encoding'}: 304`)
    t.equal(res.bytes.length, 0, 'with no body')
    t.equal(res.headers.etag, etag)
    t.equal(res.headers['content-encoding'], undefined)
  }
  const head = await request(app, path, { 'accept-encoding': 'gzip' }, 'HEAD')
  t.equal(head.status, 200)
  t.equal(head.bytes.length, 0, 'HEAD: no body')
  t.equal(head.headers.etag, etag)
})

t.test('an Idempotency-Key replay answers as the first create did, with or without compression', async t => {
  const app = await serving(t)
  const headers = { 'content-type': 'application/json', 'idempotency-key': 'compress-1' }
  const first = await request(app, '/students', headers, 'POST', JSON.stringify(ada))
  t.equal(first.status, 201)
  const replay = await request(app, '/students', { ...headers, 'accept-encoding': 'gzip' }, 'POST', JSON.stringify(ada))
  t.equal(replay.status, 201)
  t.equal(replay.headers['idempotent-replayed'], 'true')
  t.equal(replay.headers['content-encoding'], undefined, 'a record\'s answer is below the threshold')
  t.same(replay.bytes, first.bytes, 'the same body')
  t.equal(replay.headers.etag, first.headers.etag)
})

t.test('a request body sent compressed is not decompressed: 400 in the error body, never a 500', async t => {
  const app = await serving(t)
  const res = await request(app, '/students', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, 'POST', zlib.gzipSync(JSON.stringify(ada)))
  t.equal(res.status, 400)
  t.match(JSON.parse(res.bytes.toString()), { success: false, statusCode: res.status })
})
