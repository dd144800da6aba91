import net from 'node:net'
import t from 'tap'
import { build, closeCircleLast } from '../../helper.js'
import { bearer, userWithRoles } from '../api/accounts.js'
import { ada, student } from './fixtures.js'

interface Outcome { index: number, status: number, id?: number, etag?: string, error?: { code: string, message: string, data: Record<string, string[]> } }

const count = async (app: Awaited<ReturnType<typeof build>>, table: string) => Number((await app.knex(table).count({ n: '*' }))[0]!.n)

t.test('an atomic batch makes every student, each with its audit entry and its event, and answers each row in order', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const rows = [student(1), student(2), student(3)]
  const res = await app.inject({ method: 'POST', url: '/students/batch', payload: rows })
  t.equal(res.statusCode, 200)
  const outcomes = res.json<Outcome[]>()
  t.same(outcomes.map(outcome => [outcome.index, outcome.status]), [[0, 201], [1, 201], [2, 201]])
  for (const [i, outcome] of outcomes.entries()) {
    const shown = await app.inject({ method: 'GET', url: `/students/${outcome.id!}` })
    t.match(shown.json(), rows[i], `row ${i} is the student at its id`)
    t.equal(shown.headers.etag, outcome.etag, `row ${i}'s ETag is the record's`)
  }
  const audit = await app.inject({ method: 'GET', url: '/api/audit?resource[eq]=student', headers: bearer(admin.token) })
  t.same(audit.json<{ data: Array<{ action: string, resource_id: number }> }>().data.map(entry => [entry.action, entry.resource_id]).sort(),
    outcomes.map(outcome => ['create', outcome.id]).sort(), 'an audit entry each')
  const events = await app.inject({ method: 'GET', url: '/api/events?type[eq]=student.created', headers: bearer(admin.token) })
  t.same(events.json<{ data: Array<{ resource_id: number, data: { email: string } }> }>().data.map(event => [event.resource_id, event.data.email]),
    outcomes.map((outcome, i) => [outcome.id, rows[i]!.email]), 'a change event each, in the rows\' order')
})

// Row 1: not an e-mail address; 2: one a student has; 3: no age; 4: row 0's, in other case; 5: not an object.
const mixed = [student(1), { ...student(2), email: 'nope' }, ada, { name: 'No Age', email: 'noage@example.com', dob: '2001-02-03' }, { ...student(4), email: 'STUDENT1@example.com' }, 7]

t.test('an atomic batch with refused rows writes nothing, and names each refused row by index', async t => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  const [students, events, entries] = [await count(app, 'students'), await count(app, 'change_outbox'), await count(app, 'audit_log')]
  for (const url of ['/students/batch', '/students/batch?mode=atomic']) {
    const res = await app.inject({ method: 'POST', url, payload: mixed })
    t.equal(res.statusCode, 422)
    const body = res.json<{ code: string, param: string, data: Record<string, string[]>, message: string }>()
    t.match(body, { success: false, statusCode: 422, code: 'invalid_rows' })
    t.same(Object.keys(body.data).sort(), ['1.email', '2.email', '3.age', '4.email', '5'], 'a field by its row\'s index, a row that is no object by its index alone')
    t.equal(body.param, Object.keys(body.data)[0])
    t.same(body.data['5'], ['must be object'])
    t.match(body.data['2.email'], [/already exists/])
    t.match(body.data['4.email'], [/row 0 of this batch/])
    t.match(body.message, /^5 of the batch's 6 rows cannot be created, so none was/)
  }
  t.same([await count(app, 'students'), await count(app, 'change_outbox'), await count(app, 'audit_log')], [students, events, entries], 'no student, event or audit entry written')
})

t.test('an atomic batch whose one refusal is an address a student holds writes nothing, and names it; a batch held past DB_STATEMENT_TIMEOUT is 503', async t => {
  const app = await build(t, config => { config.timeouts.dbStatement = 1_000 })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  const rows = [student(1), { ...ada, email: ada.email.toUpperCase() }, student(2)]
  const res = await app.inject({ method: 'POST', url: '/students/batch', payload: rows })
  t.match(res.json(), { statusCode: 422, code: 'invalid_rows', data: { '1.email': [/already exists/] } })
  t.same(Object.keys(res.json<{ data: object }>().data), ['1.email'], 'that row alone')
  t.equal(await count(app, 'students'), 1, 'nothing of the batch written')

  // Behind a transaction-mode pooler, the statement timeout is the pooler's or the role's to set
  // (test:pgbouncer sets none): this part waits on no limit there.
  if (app.config.dbPooler === 'transaction') return
  // The table locked by a transaction left open: the INSERT waits, and is cut at the limit.
  const trx = await app.knex.transaction()
  await trx.raw('lock table students in exclusive mode')
  const held = await app.inject({ method: 'POST', url: '/students/batch', payload: [student(3)] })
  await trx.rollback()
  t.match(held.json(), { statusCode: 503, code: 'unavailable' })
  t.equal(await count(app, 'students'), 1, 'nothing written')
})

t.test('a batch met in a circle by a writer holding an address it takes (an update import) is run again, not answered 503', async t => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  // The other writer has updated Ada; in address order the batch takes aaa@, waits on ab@,
  // then closes the circle on Ada.
  const first = { ...student(1), email: 'aaa@example.com' }
  const second = { ...student(2), email: 'ab@example.com' }
  const res = await closeCircleLast(t, app, {
    other: async trx => trx('students').where({ email: ada.email }).update({ name: 'Updated' }),
    hold: async trx => trx('students').insert(second),
    write: async () => app.inject({ method: 'POST', url: '/students/batch?mode=per_row', payload: [ada, first, second] }),
    close: async trx => trx.raw('insert into students (name, email, age, dob) values (?, ?, ?, ?) on conflict ((lower(email))) do nothing', [first.name, first.email, first.age, first.dob])
  })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json<Outcome[]>().map(outcome => outcome.status), [409, 409, 201], 'run again: Ada and aaa@ taken by then, ab@ made')
})

t.test('a per-row batch makes the rows that can be, and tells each other row\'s error', async t => {
  const app = await build(t)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)
  const res = await app.inject({ method: 'POST', url: '/students/batch?mode=per_row', payload: mixed })
  t.equal(res.statusCode, 200)
  const outcomes = res.json<Outcome[]>()
  t.same(outcomes.map(outcome => [outcome.index, outcome.status, outcome.error?.code]),
    [[0, 201, undefined], [1, 400, 'invalid_body'], [2, 409, 'email_taken'], [3, 400, 'invalid_body'], [4, 409, 'email_taken'], [5, 400, 'invalid_body']])
  t.same(outcomes[1]!.error!.data, { email: ['must match format "email"'] })
  t.same(outcomes[3]!.error!.data, { age: ['is required'] })
  t.same((await app.knex('students').orderBy('id').pluck('email')), [ada.email, student(1).email], 'only row 0 written')
  t.equal(await count(app, 'change_outbox'), 2, 'an event for each student made, and none for a refused row')

  const none = await app.inject({ method: 'POST', url: '/students/batch?mode=per_row', payload: [ada] })
  t.same(none.json<Outcome[]>().map(outcome => outcome.status), [409], 'a batch of none made answers 200 with its one refusal')
  const invalid = await app.inject({ method: 'POST', url: '/students/batch?mode=per_row', payload: [{}, null] })
  t.same(invalid.json<Outcome[]>().map(outcome => outcome.status), [400, 400], 'a batch of no valid row, too')
})

t.test('one Idempotency-Key covers a batch: a retry gets the same answer, and no second copy', async t => {
  const app = await build(t)
  const headers = { 'idempotency-key': 'batch-1' }
  const rows = [student(1), student(2)]
  const first = await app.inject({ method: 'POST', url: '/students/batch?mode=per_row', headers, payload: rows })
  t.equal(first.statusCode, 200)
  const retry = await app.inject({ method: 'POST', url: '/students/batch?mode=per_row', headers, payload: rows })
  t.equal(retry.statusCode, 200)
  t.equal(retry.headers['idempotent-replayed'], 'true')
  t.same(retry.json(), first.json())
  t.equal(await count(app, 'students'), 2)
  t.equal(await count(app, 'change_outbox'), 2)
  const other = await app.inject({ method: 'POST', url: '/students/batch?mode=per_row', headers, payload: [student(3)] })
  t.match(other.json(), { statusCode: 422, code: 'idempotency_key_reused' })
  // A refused atomic batch keeps nothing: the key stays free for the batch put right.
  const refused = await app.inject({ method: 'POST', url: '/students/batch', headers: { 'idempotency-key': 'batch-2' }, payload: [student(4), { ...student(5), age: -1 }] })
  t.equal(refused.statusCode, 422)
  const fixed = await app.inject({ method: 'POST', url: '/students/batch', headers: { 'idempotency-key': 'batch-2' }, payload: [student(4), student(5)] })
  t.equal(fixed.statusCode, 200)
  t.equal(await count(app, 'students'), 4)
})

t.test('a batch\'s bounds: 1 to 1,000 rows, an array, a mode the API knows; 1,000 of the largest rows fit its body limit', async t => {
  const app = await build(t)
  const refused = async (url: string, payload: unknown, code: string, param: string) => {
    const res = await app.inject({ method: 'POST', url, payload: payload as object })
    t.equal(res.statusCode, 400, `${url} ${JSON.stringify(payload).slice(0, 40)}`)
    t.match(res.json(), { code, param })
  }
  await refused('/students/batch', [], 'invalid_body', 'body')
  await refused('/students/batch', Array.from({ length: 1001 }, (_, n) => student(n)), 'invalid_body', 'body')
  await refused('/students/batch', student(1), 'invalid_body', 'body')
  await refused('/students/batch?mode=all', [student(1)], 'invalid_parameter', 'mode')
  t.equal(await count(app, 'students'), 0)

  const largest = (n: number) => ({ name: 'x'.repeat(255), email: `${String(n).padStart(4, '0')}${'e'.repeat(238)}@example.com`, age: 150, dob: '2000-01-31' })
  const res = await app.inject({ method: 'POST', url: '/students/batch', payload: Array.from({ length: 1000 }, (_, n) => largest(n)) })
  t.equal(res.statusCode, 200)
  t.equal(await count(app, 'students'), 1000)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: Array.from({ length: 100 }, (_, n) => largest(n)) })).statusCode, 413, 'a single create keeps its own limit')
})

t.test('two batches at once that share e-mail addresses: each address made once', async t => {
  const app = await build(t)
  const shared = Array.from({ length: 50 }, (_, n) => student(n))
  const [one, two] = await Promise.all(['a', 'b'].map(async side => app.inject({
    method: 'POST', url: '/students/batch?mode=per_row', payload: [...shared, { ...student(100), email: `only-${side}@example.com` }]
  })))
  const made = [one!, two!].flatMap(res => res.json<Outcome[]>().filter(outcome => outcome.status === 201))
  t.equal(made.length, 52, 'each shared address once, and each batch\'s own')
  t.equal(await count(app, 'students'), 52)
  for (const res of [one!, two!]) t.ok(res.json<Outcome[]>().every(outcome => outcome.status === 201 || outcome.error?.code === 'email_taken'))

  const atomic = await Promise.all([0, 1].map(async () => app.inject({ method: 'POST', url: '/students/batch', payload: [student(200), student(201)] })))
  t.same(atomic.map(res => res.statusCode).sort(), [200, 422], 'of two atomic batches with the same rows, one is made, the other refused whole')
  t.equal(await count(app, 'students'), 54)
})

t.test('with the audit log and the change outbox off, a batch writes its students alone', async t => {
  const app = await build(t, config => { config.outbox.enabled = false; config.audit.enabled = false })
  const res = await app.inject({ method: 'POST', url: '/students/batch', payload: [student(1), student(2)] })
  t.same(res.json<Outcome[]>().map(outcome => outcome.status), [201, 201])
  t.same([await count(app, 'students'), await count(app, 'change_outbox'), await count(app, 'audit_log')], [2, 0, 0])
})

t.test('review findings: a lone surrogate, the mode in the key\'s request, batches of the same addresses in opposite orders, a field named row', async t => {
  const app = await build(t)
  const lone = await app.inject({ method: 'POST', url: '/students/batch', headers: { 'content-type': 'application/json' }, payload: `[${JSON.stringify(student(1)).replace('Student 1', 'Student \\ud800')}]` })
  t.equal(lone.statusCode, 200, 'a lone surrogate in a name is stored, as a single create stores it')
  t.equal((await app.knex('students').first('name'))!.name, 'Student \uFFFD')

  const headers = { 'idempotency-key': 'mode' }
  t.equal((await app.inject({ method: 'POST', url: '/students/batch?mode=per_row', headers, payload: [student(2), ada] })).statusCode, 200)
  const atomic = await app.inject({ method: 'POST', url: '/students/batch?mode=atomic', headers, payload: [student(2), ada] })
  t.match(atomic.json(), { statusCode: 422, code: 'idempotency_key_reused' }, 'the same key and rows in another mode is another request')

  // Each batch holds the other's addresses in the opposite order: inserted in the order of
  // their addresses, neither waits for the other in a circle.
  const shared = Array.from({ length: 1000 }, (_, n) => student(1000 + n))
  const answers = await Promise.all([0, 1, 2, 3].map(async i => app.inject({ method: 'POST', url: '/students/batch?mode=per_row', payload: i % 2 === 0 ? shared : [...shared].reverse() })))
  t.same(answers.map(res => res.statusCode), [200, 200, 200, 200], 'no deadlock, no 503')
  const made = answers.flatMap(res => res.json<Outcome[]>().filter(outcome => outcome.status === 201))
  t.equal(made.length, 1000, 'each address once')

  const rowField = await app.inject({ method: 'POST', url: '/students/batch', payload: [student(200), { ...student(201), row: 1 }, 'x'] })
  t.same(rowField.json<{ data: Record<string, string[]> }>().data, { '1.row': ['is not allowed'], 2: ['must be object'] })
})

t.test('a batch whose connection drops as it is sent, then retried with its key until answered: one copy of each row', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const rows = Array.from({ length: 1000 }, (_, n) => student(n))
  const body = JSON.stringify(rows)
  const headers = { 'content-type': 'application/json', 'idempotency-key': 'dropped' }
  // The whole request, then the connection reset before any answer: the client never learns.
  await new Promise<void>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.write(`POST /students/batch HTTP/1.1\r\nhost: 127.0.0.1\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`, () => {
        socket.resetAndDestroy()
        resolve()
      })
    }).on('error', reject)
  })
  // Retried, as a client does after a lost answer: a 409 while the first still runs, then its answer.
  let retry: Response
  for (;;) {
    retry = await fetch(`http://127.0.0.1:${port}/students/batch`, { method: 'POST', headers, body })
    if (retry.status !== 409) break
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  t.equal(retry.status, 200)
  const outcomes = await retry.json() as Outcome[]
  t.ok(outcomes.every(outcome => outcome.status === 201), 'every row made, by the first request or by the retry')
  t.equal(await count(app, 'students'), 1000, 'one copy of each row')
  t.equal(await count(app, 'change_outbox'), 1000, 'one event each')
})
