import http from 'node:http'
import net from 'node:net'
import { Readable } from 'node:stream'
import t from 'tap'
import { build, closeCircleLast, lockWaiters, within } from '../../helper.js'
import { bearer, userWithRoles } from '../api/accounts.js'
import { ada, student } from './fixtures.js'

type App = Awaited<ReturnType<typeof build>>
interface RowError { line: number, code: string, message: string, data: Record<string, string[]> }
interface Result { inserted: number, updated: number, unchanged: number, skipped: number, failed: number, errors: RowError[] }

const CSV = { 'content-type': 'text/csv' }
const NDJSON = { 'content-type': 'application/x-ndjson' }

const count = async (app: App, table: string) => Number((await app.knex(table).count({ n: '*' }))[0]!.n)
const counts = async (app: App) => [await count(app, 'students'), await count(app, 'change_outbox'), await count(app, 'audit_log')]
const csvLine = (row: { name: string, email: string, age: number, dob: string }) => `${row.name},${row.email},${row.age},${row.dob}`
const ndjson = (rows: unknown[]) => rows.map(row => JSON.stringify(row)).join('\n') + '\n'

t.test('a CSV file makes its students, each with its audit entry and its event, in the file\'s order', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  // A byte-order mark, CRLF line ends, the fields in another order, a quoted name holding a
  // comma, a quote and a line end, a blank line, and no line end at the end.
  const file = '\uFEFFemail,name,dob,age\r\n' +
    'one@example.com,"Doe, ""Jo""\r\nthe second",2001-02-03,20\r\n' +
    '\r\n' +
    'two@example.com, Two ,2002-03-04,21\r\n' +
    'three@example.com,Three,2003-04-05,22'
  const res = await app.inject({ method: 'POST', url: '/students/import', headers: CSV, payload: file })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { inserted: 3, updated: 0, unchanged: 0, skipped: 0, failed: 0, errors: [] })
  const list = (await app.inject({ url: '/students' })).json<Array<{ id: number, name: string, email: string, age: number, dob: string }>>()
  t.same(list.map(({ name, email, age, dob }) => ({ name, email, age, dob })), [
    { name: 'Doe, "Jo"\r\nthe second', email: 'one@example.com', age: 20, dob: '2001-02-03' },
    { name: 'Two', email: 'two@example.com', age: 21, dob: '2002-03-04' },
    { name: 'Three', email: 'three@example.com', age: 22, dob: '2003-04-05' }
  ], 'each row a student, its strings trimmed, in the file\'s order')
  const audit = await app.inject({ method: 'GET', url: '/api/audit?resource[eq]=student', headers: bearer(admin.token) })
  t.same(audit.json<{ data: Array<{ action: string, resource_id: number }> }>().data.map(entry => [entry.action, entry.resource_id]).sort(),
    list.map(row => ['create', row.id]).sort(), 'an audit entry each')
  const events = await app.inject({ method: 'GET', url: '/api/events?type[eq]=student.created', headers: bearer(admin.token) })
  t.same(events.json<{ data: Array<{ resource_id: number, data: { email: string } }> }>().data.map(event => [event.resource_id, event.data.email]),
    list.map(row => [row.id, row.email]), 'a change event each, in the file\'s order')
})

t.test('an NDJSON file makes its students', async t => {
  const app = await build(t, { logLevel: 'error' })
  const rows = [student(1), student(2)]
  const res = await app.inject({ method: 'POST', url: '/students/import', headers: { 'content-type': 'application/x-ndjson; charset=utf-8' }, payload: '\uFEFF' + ndjson(rows) + '\n  \n' })
  t.equal(res.statusCode, 200, res.body)
  t.match(res.json(), { inserted: 2, failed: 0 })
  t.same((await app.inject({ url: '/students' })).json<Array<{ email: string }>>().map(row => row.email), rows.map(row => row.email))
})

// Line 2: good; 3: not an e-mail address; 4: an address a student has; 5: no age column value;
// 6: line 2's address in other case; 7: fields too few; 8: good.
const mixedCsv = ['name,email,age,dob', csvLine(student(1)), csvLine({ ...student(2), email: 'nope' }), csvLine(ada),
  'No Age,noage@example.com,,2001-02-03', csvLine({ ...student(4), email: 'STUDENT1@example.com' }), 'Too few,few@example.com', csvLine(student(8))].join('\n') + '\n'

t.test('on_conflict=error: a file with refused rows writes nothing, and names the rows by line', async t => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  const before = await counts(app)
  for (const url of ['/students/import', '/students/import?on_conflict=error']) {
    const res = await app.inject({ method: 'POST', url, headers: CSV, payload: mixedCsv })
    t.equal(res.statusCode, 422, res.body)
    const body = res.json<{ code: string, data: Record<string, string[]>, message: string }>()
    t.match(body, { success: false, statusCode: 422, code: 'invalid_rows' })
    t.same(Object.keys(body.data).sort(), ['3.email', '4.email', '5.age', '6.email', '7'])
    t.match(body.data['4.email'], [/already exists/])
    t.match(body.data['6.email'], [/line 2 of this file has it/])
    t.match(body.message, /^5 of the file's 7 rows cannot be imported, so none was/)
  }
  t.same(await counts(app), before, 'no student, event or audit entry written')
})

t.test('on_conflict=skip writes the rows that can be, skips those whose address a student has, and tells the others by line', async t => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  const res = await app.inject({ method: 'POST', url: '/students/import?on_conflict=skip', headers: CSV, payload: mixedCsv })
  t.equal(res.statusCode, 200, res.body)
  const result = res.json<Result>()
  t.match(result, { inserted: 2, updated: 0, unchanged: 0, skipped: 1, failed: 4 })
  t.same(result.errors.map(error => [error.line, error.code, Object.keys(error.data)]), [
    [3, 'invalid_body', ['email']], [5, 'invalid_body', ['age']], [6, 'email_taken', ['email']], [7, 'invalid_body', ['row']]
  ])
  t.same((await app.inject({ url: '/students' })).json<Array<{ email: string }>>().map(row => row.email), [ada.email, student(1).email, student(8).email])
})

t.test('on_conflict=update changes each student the file names by address, audited and told as a PUT would be', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const [first, second] = [student(1), student(2)]
  const made = await Promise.all([first, second].map(async row => (await app.inject({ method: 'POST', url: '/students', payload: row })).json<{ id: number, updated_at: string }>()))
  // The first changes its name and age (its address in other case), the second stays, a third is new.
  const rows = [{ ...first, name: 'Renamed', age: 77, email: first.email.toUpperCase() }, second, student(3)]
  const res = await app.inject({ method: 'POST', url: '/students/import?on_conflict=update', headers: NDJSON, payload: ndjson(rows) })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { inserted: 1, updated: 1, unchanged: 1, skipped: 0, failed: 0, errors: [] })
  const changed = (await app.inject({ url: `/students/${made[0]!.id}` })).json<{ name: string, age: number, email: string, updated_at: string }>()
  t.match(changed, { name: 'Renamed', age: 77, email: first.email.toUpperCase() })
  t.not(changed.updated_at, made[0]!.updated_at)
  t.equal((await app.inject({ url: `/students/${made[1]!.id}` })).json<{ updated_at: string }>().updated_at, made[1]!.updated_at, 'a student the row matches is not written')

  // The same change by PUT, to compare: its audit entry and event tell the same.
  const put = await app.inject({ method: 'PUT', url: `/students/${made[1]!.id}`, payload: { name: 'Renamed', age: 77, email: second.email.toUpperCase() } })
  t.equal(put.statusCode, 200)
  const entries = (await app.inject({ url: '/api/audit?resource[eq]=student&action[eq]=update', headers: bearer(admin.token) })).json<{ data: Array<{ resource_id: number, before: unknown, after: unknown }> }>().data
  const entryOf = (id: number) => entries.find(entry => entry.resource_id === id)
  t.same(entryOf(made[0]!.id)!.before, { name: first.name, age: first.age, email: first.email })
  t.same(entryOf(made[0]!.id)!.after, { name: 'Renamed', age: 77, email: first.email.toUpperCase() })
  t.same(Object.keys(entryOf(made[0]!.id)!.before as object).sort(), Object.keys(entryOf(made[1]!.id)!.before as object).sort(), 'the fields a PUT\'s entry shows')
  const events = (await app.inject({ url: '/api/events?type[eq]=student.updated', headers: bearer(admin.token) })).json<{ data: Array<{ resource_id: number, changed: string[], data: { name: string } }> }>().data
  t.same(events.map(event => [event.resource_id, event.changed, event.data.name]), [[made[0]!.id, ['name', 'email', 'age'], 'Renamed'], [made[1]!.id, ['name', 'email', 'age'], 'Renamed']], 'an event as a PUT\'s, with the fields changed')
})

t.test('a CSV that cannot be read on (a quote left open) is refused whole, whatever on_conflict says: no row after it could be trusted', async t => {
  const app = await build(t)
  const file = ['name,email,age,dob', csvLine(student(1)), '"Unclosed,u@example.com,1,2000-01-01', ...Array.from({ length: 50 }, (_, i) => csvLine(student(10 + i)))].join('\n') + '\n'
  const res = await app.inject({ method: 'POST', url: '/students/import?on_conflict=skip', headers: CSV, payload: file })
  t.match(res.json(), { statusCode: 400, code: 'invalid_body', data: { 3: [/The file cannot be read from this line on/] } })
  t.equal(await count(app, 'students'), 0, 'nothing written')
})

t.test('a file refused whole: a header naming no field, no header, JSON, no body, too large', async t => {
  const app = await build(t, { imports: { maxBytes: 2048, timeoutMs: 60_000 } })
  const before = await counts(app)
  const header = await app.inject({ method: 'POST', url: '/students/import', headers: CSV, payload: 'name,email,age,dob,admin\nA,a@example.com,1,2001-01-01,yes\n' })
  t.equal(header.statusCode, 400)
  t.match(header.json(), { code: 'invalid_body', data: { header: [/column 5 names "admin", which is not a field/] } })
  const twice = await app.inject({ method: 'POST', url: '/students/import', headers: CSV, payload: 'name,name\n' })
  t.match(twice.json(), { statusCode: 400, data: { header: [/column 2 names "name" again/] } })
  const empty = await app.inject({ method: 'POST', url: '/students/import', headers: CSV, payload: '' })
  t.match(empty.json(), { statusCode: 400, data: { header: [/is missing/] } })
  const json = await app.inject({ method: 'POST', url: '/students/import', payload: [student(1)] })
  t.match(json.json(), { statusCode: 415, code: 'unsupported_media_type' })
  const latin = await app.inject({ method: 'POST', url: '/students/import', headers: { 'content-type': 'text/csv; charset=iso-8859-1' }, payload: 'name,email,age,dob\n' })
  t.match(latin.json(), { statusCode: 415, message: /UTF-8, not iso-8859-1/ })
  t.equal((await app.inject({ method: 'POST', url: '/students/import', headers: { 'content-type': 'text/csv; charset="UTF-8"' }, payload: 'name,email,age,dob\n' })).statusCode, 200)
  const none = await app.inject({ method: 'POST', url: '/students/import' })
  t.match(none.json(), { statusCode: 415, code: 'unsupported_media_type' })
  const rows = Array.from({ length: 100 }, (_, i) => student(i))
  const large = await app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: ndjson(rows) })
  t.match(large.json(), { statusCode: 413, code: 'payload_too_large' })
  t.same(await counts(app), before, 'nothing written')
  t.equal((await app.inject({ method: 'POST', url: '/students', headers: CSV, payload: csvLine(ada) })).statusCode, 415, 'other routes take no file')
})

t.test('NDJSON lines that cannot be read are told by line', async t => {
  const app = await build(t)
  const long = JSON.stringify({ ...student(9), name: 'x'.repeat(70_000) })
  const file = [JSON.stringify(student(1)), '{"name":', '[1,2]', long, JSON.stringify({ ...student(5), extra: 1 }), JSON.stringify({ ...student(6), name: 'a\u0000b' }), JSON.stringify(student(7))].join('\n')
  const res = await app.inject({ method: 'POST', url: '/students/import?on_conflict=skip', headers: NDJSON, payload: file })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json<Result>().errors.map(error => [error.line, error.code, Object.keys(error.data)]), [
    [2, 'malformed_json', ['row']], [3, 'invalid_body', ['row']], [4, 'invalid_body', ['row']], [5, 'invalid_body', ['extra']], [6, 'invalid_body', ['name']]
  ])
  t.match(res.json(), { inserted: 2, failed: 5 })
})

t.test('one Idempotency-Key covers a file: a retry gets the first answer and writes nothing again', async t => {
  const app = await build(t)
  const file = ndjson([student(1), student(2)])
  const headers = { ...NDJSON, 'idempotency-key': 'import-1' }
  const first = await app.inject({ method: 'POST', url: '/students/import', headers, payload: file })
  t.equal(first.statusCode, 200)
  const before = await counts(app)
  const again = await app.inject({ method: 'POST', url: '/students/import', headers, payload: file })
  t.equal(again.statusCode, 200)
  t.equal(again.headers['idempotent-replayed'], 'true')
  t.equal(again.body, first.body)
  t.same(await counts(app), before, 'no second copy')
  const other = await app.inject({ method: 'POST', url: '/students/import', headers, payload: ndjson([student(3)]) })
  t.match(other.json(), { statusCode: 422, code: 'idempotency_key_reused' })
  const otherForm = await app.inject({ method: 'POST', url: '/students/import', headers: { ...headers, 'content-type': 'text/csv' }, payload: file })
  t.match(otherForm.json(), { statusCode: 422, code: 'idempotency_key_reused' }, 'the same bytes as CSV are another request')
  const otherMode = await app.inject({ method: 'POST', url: '/students/import?on_conflict=skip', headers, payload: file })
  t.match(otherMode.json(), { statusCode: 422, code: 'idempotency_key_reused' }, 'the query is part of the request')
})

t.test('a retry whose file comes slowly is answered once it has all come, holding no transaction open meanwhile', async t => {
  // Past DB_IDLE_IN_TRANSACTION_TIMEOUT, PostgreSQL ends a transaction left waiting: a retry
  // read within the key's look-up would be cut off (503) by a slow upload.
  const app = await build(t, config => { config.timeouts.dbIdleInTransaction = 300 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  const file = ndjson([student(1), student(2)])
  const headers = { ...NDJSON, 'idempotency-key': 'slow-1' }
  const first = await app.inject({ method: 'POST', url: '/students/import', headers, payload: file })
  t.equal(first.statusCode, 200)
  const answer = await new Promise<{ status: number, body: string, replayed: unknown }>((resolve, reject) => {
    const request = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/students/import', headers: { ...headers, 'content-length': String(Buffer.byteLength(file)) }, agent: false }, response => {
      let body = ''
      response.setEncoding('utf8').on('data', chunk => { body += chunk }).on('end', () => resolve({ status: response.statusCode!, body, replayed: response.headers['idempotent-replayed'] }))
    })
    request.on('error', reject)
    request.write(file.slice(0, 10))
    setTimeout(() => request.end(file.slice(10)), 1000)
  })
  t.equal(answer.status, 200, answer.body)
  t.equal(answer.replayed, 'true')
  t.equal(answer.body, first.body)
  t.equal(await count(app, 'students'), 2)
})

/** A POST that sends `Expect: 100-continue` and its body only once told to (100 Continue): whether it was told, and the answer. */
async function expectingContinue (port: number, path: string, headers: Record<string, string>, body: string) {
  return new Promise<{ continued: boolean, status: number, body: string }>((resolve, reject) => {
    let continued = false
    const request = http.request({ port, host: '127.0.0.1', method: 'POST', path, headers: { ...headers, expect: '100-continue', 'content-length': String(Buffer.byteLength(body)) }, agent: false }, response => {
      let text = ''
      response.setEncoding('utf8').on('data', chunk => { text += chunk }).on('end', () => {
        resolve({ continued, status: response.statusCode!, body: text })
        request.destroy()
      })
    })
    request.on('continue', () => { continued = true; request.end(body) })
    request.on('error', reject)
  })
}

t.test('Expect: 100-continue: an import refused by its checks answers before its file is sent; one let in is told to send it', async t => {
  const app = await build(t, { requireIfMatch: true })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  const file = ndjson([student(1), student(2)])
  const refused = await expectingContinue(port, '/students/import?on_conflict=update', NDJSON, file)
  t.match(refused, { continued: false, status: 428 }, 'the final answer alone: the file never sent')
  t.match(JSON.parse(refused.body), { code: 'if_match_required' })

  const headers = { ...NDJSON, 'idempotency-key': 'expecting' }
  const imported = await expectingContinue(port, '/students/import', headers, file)
  t.match(imported, { continued: true, status: 200 })
  t.match(JSON.parse(imported.body), { inserted: 2 })
  t.match(await expectingContinue(port, '/students/import', headers, file), { continued: true, status: 200 }, 'a replay reads the file too, for its digest')
  const unauthenticated = await expectingContinue(port, '/api/clients/import', NDJSON, file)
  t.match(unauthenticated, { continued: false, status: 401 })
  t.match(await expectingContinue(port, '/students', { 'content-type': 'application/json' }, JSON.stringify(student(3))), { continued: true, status: 201 }, 'any other route is told as it reads its body')
  t.equal(await count(app, 'students'), 3)
})

/** Sends a POST of `body` over a socket and closes it once the body is sent, before any answer. */
async function sendAndDrop (port: number, headers: Record<string, string>, body: string) {
  const socket = net.connect(port, '127.0.0.1')
  await new Promise(resolve => socket.once('connect', resolve))
  const head = Object.entries({ ...headers, 'content-length': String(Buffer.byteLength(body)) }).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  socket.end(`POST /students/import HTTP/1.1\r\nhost: 127.0.0.1\r\n${head}\r\n${body}`)
  socket.destroy()
}

t.test('a retried import after a dropped connection leaves one copy of each row', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as net.AddressInfo).port
  const rows = Array.from({ length: 500 }, (_, i) => student(i))
  const headers = { ...NDJSON, 'idempotency-key': 'dropped-1' }
  await sendAndDrop(port, headers, ndjson(rows))
  // The retry: 409 while the first still runs, then the first's answer.
  let answer: { status: number, body: string, replayed: unknown } | undefined
  t.ok(await within(20_000, async () => {
    answer = await new Promise((resolve, reject) => {
      const request = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/students/import', headers, agent: false }, response => {
        let body = ''
        response.setEncoding('utf8').on('data', chunk => { body += chunk }).on('end', () => resolve({ status: response.statusCode!, body, replayed: response.headers['idempotent-replayed'] }))
      })
      request.on('error', reject)
      request.end(ndjson(rows))
    })
    return answer!.status !== 409
  }))
  t.equal(answer!.status, 200, answer!.body)
  t.match(JSON.parse(answer!.body), { inserted: 500 })
  t.equal(await count(app, 'students'), 500, 'one copy of each row')
})

t.test('a client gone halfway through its file writes nothing, and the service serves on', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as net.AddressInfo).port
  const file = ndjson(Array.from({ length: 2000 }, (_, i) => student(i)))
  const socket = net.connect(port, '127.0.0.1')
  await new Promise(resolve => socket.once('connect', resolve))
  // Announced whole, sent half: the import has begun to load rows when the client leaves.
  socket.write(`POST /students/import HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-ndjson\r\ncontent-length: ${Buffer.byteLength(file)}\r\n\r\n${file.slice(0, file.length / 2)}`)
  t.ok(await within(10_000, async () => Number((await app.knex.raw<{ rows: [{ n: string }] }>("select count(*) as n from pg_stat_activity where datname = current_database() and query like 'copy pg_temp.import_rows%' and state = 'active'")).rows[0].n) > 0), 'the COPY runs')
  socket.destroy()
  t.ok(await within(10_000, async () => Number((await app.knex.raw<{ rows: [{ n: string }] }>("select count(*) as n from pg_stat_activity where datname = current_database() and query like 'copy pg_temp.import_rows%' and state = 'active'")).rows[0].n) === 0), 'the COPY ends')
  t.equal(await count(app, 'students'), 0, 'nothing written')
  const after = await app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: ndjson([student(1)]) })
  t.match(after.json(), { inserted: 1 })
})

t.test('an upload that stalls is cut once its connection has been idle for REQUEST_TIMEOUT, and its bulk slot is free again', async t => {
  const app = await build(t, config => {
    config.timeouts.request = 1_000
    config.bulkConcurrency = 1
  })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  const file = ndjson([student(1), student(2)])
  const socket = net.connect(port, '127.0.0.1')
  await new Promise(resolve => socket.once('connect', resolve))
  socket.on('error', () => {})
  socket.write(`POST /students/import HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/x-ndjson\r\ncontent-length: ${Buffer.byteLength(file)}\r\n\r\n${file.slice(0, 10)}`)
  const closed = await Promise.race([
    new Promise(resolve => socket.once('close', () => resolve(true))),
    new Promise(resolve => setTimeout(resolve, 10_000, false))
  ])
  socket.destroy()
  t.ok(closed, 'cut within seconds, not at IMPORT_TIMEOUT')
  t.ok(await within(5_000, async () => (await app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: file })).statusCode === 200), 'the slot free again')
  t.equal(await count(app, 'students'), 2)
})

t.test('a file larger than IMPORT_MAX_BYTES sent without Content-Length is cut off at the limit: 413, nothing written', async t => {
  const app = await build(t, { imports: { maxBytes: 4096, timeoutMs: 60_000 } })
  const file = ndjson(Array.from({ length: 200 }, (_, i) => student(i)))
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as net.AddressInfo
  // Chunked: the size is not known before the bytes come.
  const answer = await new Promise<{ status: number, body: string, connection: unknown }>((resolve, reject) => {
    const request = http.request({ port, host: '127.0.0.1', method: 'POST', path: '/students/import', headers: { ...NDJSON, 'transfer-encoding': 'chunked' }, agent: false }, response => {
      let body = ''
      response.setEncoding('utf8').on('data', chunk => { body += chunk }).on('end', () => resolve({ status: response.statusCode!, body, connection: response.headers.connection }))
    })
    request.on('error', reject)
    Readable.from([file.slice(0, 3000), file.slice(3000)]).pipe(request)
  })
  t.equal(answer.status, 413)
  t.match(JSON.parse(answer.body), { statusCode: 413, code: 'payload_too_large', message: /limit of 4096 bytes/ })
  t.equal(await count(app, 'students'), 0)
})

t.test('on_conflict=error: an address taken by a student committed while the file was imported refuses it whole, 409', async t => {
  const app = await build(t)
  // A student made in a transaction left open: the import's check does not see it, and its
  // INSERT waits on that address until the transaction commits.
  const trx = await app.knex.transaction()
  await trx('students').insert(student(2))
  const importing = app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: ndjson([student(1), student(2), student(3)]) })
  t.ok(await lockWaiters(app, 1), 'the import waits on the address')
  await trx.commit()
  const res = await importing
  t.match(res.json(), { statusCode: 409, code: 'email_taken', message: /The email of 1 rows was taken by records made while the file was imported, so nothing was/ })
  t.same((await app.inject({ url: '/students' })).json<Array<{ email: string }>>().map(row => row.email), [student(2).email], 'nothing of the file written')
})

t.test('IMPORT_TIMEOUT bounds an import\'s writes too: one held back past it is refused, 503, nothing written', async t => {
  const app = await build(t, { imports: { maxBytes: 1e6, timeoutMs: 1500 } })
  const made = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json<{ id: number }>()
  // The student the file updates is locked by a transaction left open past the limit.
  const trx = await app.knex.transaction()
  await trx('students').where({ id: made.id }).forUpdate()
  const res = await app.inject({ method: 'POST', url: '/students/import?on_conflict=update', headers: NDJSON, payload: ndjson([{ ...ada, name: 'Renamed' }, student(1)]) })
  await trx.rollback()
  t.match(res.json(), { statusCode: 503, code: 'unavailable' })
  t.equal(await count(app, 'students'), 1, 'nothing written')
})

t.test('imports sharing addresses in opposite orders both end: none waits on another in a circle', async t => {
  const app = await build(t)
  const shared = Array.from({ length: 2000 }, (_, i) => student(i))
  await app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: ndjson(shared.filter((_, i) => i % 2 === 0).map(row => ({ ...row, name: 'Before' }))) })
  for (const onConflict of ['skip', 'update']) {
    const answers = await Promise.all([shared, [...shared].reverse()].map(rows =>
      app.inject({ method: 'POST', url: `/students/import?on_conflict=${onConflict}`, headers: NDJSON, payload: ndjson(rows) })))
    t.same(answers.map(res => res.statusCode), [200, 200], `${onConflict}: no deadlock, no 503`)
  }
  t.equal(await count(app, 'students'), 2000, 'each address once')
  t.equal(Number((await app.knex('students').where({ name: 'Before' }).count({ n: '*' }))[0]!.n), 0, 'every student updated')
})

t.test('on_conflict=update met in a circle by a write that inserts in address order: PostgreSQL fails the import\'s writes, and they are tried again', async t => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  // Another writer (a skip import, a batch) has inserted a new address, and goes on to one the
  // import updates; the import updates Ada, waits on mid@, then closes the circle on the
  // address the other inserted.
  const mid = { ...student(2), email: 'mid@example.com' }
  const res = await closeCircleLast(t, app, {
    other: async trx => trx('students').insert(student(1)),
    hold: async trx => trx('students').insert(mid),
    write: async () => app.inject({ method: 'POST', url: '/students/import?on_conflict=update', headers: NDJSON, payload: ndjson([{ ...ada, name: 'Renamed' }, mid, student(1)]) }),
    close: async trx => trx.raw('insert into students (name, email, age, dob) values (?, ?, ?, ?) on conflict ((lower(email))) do nothing', [ada.name, ada.email, ada.age, ada.dob])
  })
  t.equal(res.statusCode, 200, res.body)
  // Tried again, the other has committed meanwhile, or not yet (its address is then skipped).
  const result = res.json<Result>()
  t.match(result, { updated: 1, inserted: 1 }, 'tried again: Ada updated, mid@ made')
  t.equal(result.unchanged + result.skipped, 1, 'the address the other made: found as it is, or skipped')
  t.equal((await app.knex('students').where({ email: ada.email }).first('name'))!.name, 'Renamed')
})

t.test('REQUIRE_IF_MATCH: on_conflict=update is refused, 428, before the file is read; skip still imports', async t => {
  const app = await build(t, { requireIfMatch: true })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  const file = ndjson([{ ...ada, name: 'Renamed' }, student(1)])
  const update = await app.inject({ method: 'POST', url: '/students/import?on_conflict=update', headers: NDJSON, payload: file })
  t.match(update.json(), { statusCode: 428, code: 'if_match_required', message: /on_conflict=skip/ })
  t.equal(await count(app, 'students'), 1, 'nothing written')
  t.match((await app.inject({ method: 'POST', url: '/students/import?on_conflict=skip', headers: NDJSON, payload: file })).json(), { inserted: 1, skipped: 1 })
})

t.test('with the audit log and the change outbox off, an import writes neither', async t => {
  const app = await build(t, { audit: { enabled: false, retentionSeconds: 86_400 }, outbox: { enabled: false, retentionSeconds: 86_400, heartbeatSeconds: 15 } })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  const res = await app.inject({ method: 'POST', url: '/students/import?on_conflict=update', headers: NDJSON, payload: ndjson([{ ...ada, name: 'Renamed' }, student(1)]) })
  t.match(res.json(), { inserted: 1, updated: 1 })
  t.same([await count(app, 'audit_log'), await count(app, 'change_outbox')], [0, 0])
})

t.test('a large file: its rows written in order; of 300 refused, the first 100 named by line, and the number of all', async t => {
  const app = await build(t)
  const good = Array.from({ length: 3000 }, (_, i) => student(i))
  const res = await app.inject({ method: 'POST', url: '/students/import', headers: CSV, payload: ['name,email,age,dob', ...good.map(csvLine)].join('\n') })
  t.match(res.json(), { inserted: 3000, failed: 0 })
  t.same((await app.knex('students').orderBy('id').pluck('email')), good.map(row => row.email), 'in the file\'s order')

  // Bad rows from line 2 on, every other line.
  const lines = Array.from({ length: 300 }, (_, i) => [csvLine({ ...student(5000 + i), age: -1 }), csvLine(student(6000 + i))]).flat()
  const refused = await app.inject({ method: 'POST', url: '/students/import', headers: CSV, payload: ['name,email,age,dob', ...lines].join('\n') })
  const body = refused.json<{ data: Record<string, string[]>, message: string }>()
  t.match(body, { statusCode: 422, code: 'invalid_rows', message: /^300 of the file's 600 rows cannot be imported/ })
  t.same(Object.keys(body.data), Array.from({ length: 100 }, (_, i) => `${2 + 2 * i}.age`), 'the first 100, by line')
  t.equal(await count(app, 'students'), 3000)
  const longLast = await app.inject({ method: 'POST', url: '/students/import?on_conflict=skip', headers: NDJSON, payload: ndjson([student(7000)]) + JSON.stringify({ ...student(7001), name: 'y'.repeat(70_000) }) })
  t.match(longLast.json(), { inserted: 1, failed: 1, errors: [{ line: 2, data: { row: [/longer than 65536 bytes/] } }] })
})

t.test('clients gone right after their headers hold nothing: no COPY left waiting, the slots free', async t => {
  const app = await build(t, { bulkConcurrency: 2 })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as net.AddressInfo).port
  for (let i = 0; i < 6; i++) {
    const socket = net.connect(port, '127.0.0.1')
    await new Promise(resolve => socket.once('connect', resolve))
    socket.write('POST /students/import HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: text/csv\r\ncontent-length: 1000\r\n\r\nname,email,age,dob\n')
    socket.destroy()
  }
  const copies = async () => Number((await app.knex.raw<{ rows: [{ n: string }] }>("select count(*) as n from pg_stat_activity where datname = current_database() and query like 'copy pg_temp.import_rows%' and state <> 'idle'")).rows[0].n)
  t.ok(await within(10_000, async () => await copies() === 0), 'no COPY left')
  t.ok(await within(10_000, async () => (await app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: ndjson([student(1)]) })).statusCode === 200), 'an import runs: its slot is free')
  t.equal(await count(app, 'students'), 1)
})
