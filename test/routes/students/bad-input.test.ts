import t, { type Test } from 'tap'
import type { FastifyInstance, InjectOptions } from 'fastify'
import { build } from '../../helper.js'
import { MAX_BODY_DEPTH } from '../../../plugins/app/json-body.js'
import { ada, variants } from './fixtures.js'

/** What an answer must never show: SQL, constraint names, stack frames. */
const LEAK = /\bselect\b|\binsert into\b|\bupdate "?\w+"? set\b|_unique\b|_pkey\b|\bat \S+ \(|node_modules/i

const snapshot = (app: FastifyInstance) => app.knex('students').select().orderBy('id')

/** Sends a request that must be refused with `status` and the contract's error body, changing no row. */
async function refused (t: Test, app: FastifyInstance, request: InjectOptions, status: number, data?: Record<string, unknown>) {
  const before = await snapshot(app)
  const res = await app.inject(request)
  const label = `${request.method} ${request.url} ${JSON.stringify(request.payload ?? '').slice(0, 60)}`
  t.equal(res.statusCode, status, label)
  const body = res.json()
  t.match(body, { success: false, statusCode: status, error: String, message: String }, label)
  if (data) t.match(body.data, data, label)
  t.notMatch(res.body, LEAK, 'no SQL or stack')
  t.same(await snapshot(app), before, 'no row changed')
  return body
}

const today = new Date().toISOString().slice(0, 10)
const nextYear = `${new Date().getUTCFullYear() + 1}-01-01`

const badStudents: [string, Record<string, unknown>, Record<string, unknown>][] = [
  ['empty body', {}, { name: ['is required'], email: ['is required'], age: ['is required'], dob: ['is required'] }],
  ['missing name', { email: ada.email, age: ada.age, dob: ada.dob }, { name: ['is required'] }],
  ['empty name', { ...ada, name: '' }, { name: ['must not be empty'] }],
  ['blank name', { ...ada, name: '   ' }, { name: ['must not be empty'] }],
  ['name too long', { ...ada, name: 'x'.repeat(256) }, { name: Array }],
  ['name not a string', { ...ada, name: 42 }, { name: ['must be string'] }],
  ['bad e-mail', { ...ada, email: 'not-an-email' }, { email: ['must match format "email"'] }],
  ['e-mail too long', { ...ada, email: `${'a'.repeat(250)}@x.io` }, { email: Array }],
  ['age -1', { ...ada, age: -1 }, { age: ['must be >= 0'] }],
  ['age 151', { ...ada, age: 151 }, { age: ['must be <= 150'] }],
  ['age 3.5', { ...ada, age: 3.5 }, { age: ['must be integer'] }],
  ['age "20"', { ...ada, age: '20' }, { age: ['must be integer'] }],
  ['age null', { ...ada, age: null }, { age: ['must be integer'] }],
  ['dob 2023-02-30', { ...ada, dob: '2023-02-30' }, { dob: ['must match format "date"'] }],
  ['dob 2023-13-01', { ...ada, dob: '2023-13-01' }, { dob: ['must match format "date"'] }],
  ['dob with a time', { ...ada, dob: '2000-01-01T00:00:00Z' }, { dob: ['must match format "date"'] }],
  ['dob in the future', { ...ada, dob: nextYear }, { dob: ['must not be in the future'] }],
  ['dob 0000-01-01', { ...ada, dob: '0000-01-01' }, { dob: ['must not be before 0001-01-01'] }],
  ['unknown property', { ...ada, id: 7 }, { id: ['is not allowed'] }],
  ['mass assignment', { ...ada, created_at: '2000-01-01T00:00:00Z' }, { created_at: ['is not allowed'] }],
  ['NUL byte', { ...ada, name: 'Ada\u0000' }, { name: ['must not contain NUL characters'] }],
  ['NUL byte deeper down', { ...ada, extra: [{ note: '\u0000' }] }, { 'extra.0.note': ['must not contain NUL characters'] }]
]

for (const { name, base } of variants) {
  t.test(`${name}: bad student bodies on POST`, async t => {
    const app = await build(t)
    for (const [label, payload, data] of badStudents) {
      t.test(label, async t => { await refused(t, app, { method: 'POST', url: base, payload }, 400, data) })
    }
  })

  t.test(`${name}: bad bodies on the wire`, async t => {
    const app = await build(t)
    const { id } = (await app.inject({ method: 'POST', url: base, payload: ada })).json()
    for (const [method, url] of [['POST', base], ['PUT', `${base}/${id}`]] as const) {
      await refused(t, app, { method, url, payload: '{"name": "Ada",', headers: { 'content-type': 'application/json' } }, 400)
      await refused(t, app, { method, url, payload: '', headers: { 'content-type': 'application/json' } }, 400)
      await refused(t, app, { method, url, payload: '[]', headers: { 'content-type': 'application/json' } }, 400)
      await refused(t, app, { method, url, payload: '"Ada"', headers: { 'content-type': 'application/json' } }, 400)
      await refused(t, app, { method, url, payload: 'name=Ada', headers: { 'content-type': 'application/x-www-form-urlencoded' } }, 415)
      await refused(t, app, { method, url, payload: JSON.stringify(ada), headers: { 'content-type': 'text/plain' } }, 415)
      await refused(t, app, { method, url, payload: '{"__proto__": {"admin": true}, "name": "Ada"}', headers: { 'content-type': 'application/json' } }, 400)
      // 16 KB, under the body limit: nested 8,000 levels deep, past MAX_BODY_DEPTH.
      await refused(t, app, { method, url, payload: `{"name":${'['.repeat(8000)}${']'.repeat(8000)}}`, headers: { 'content-type': 'application/json' } }, 400, {
        body: [`must not nest objects or arrays more than ${MAX_BODY_DEPTH} levels deep`]
      })
      await refused(t, app, { method, url, payload: `${'{"a":'.repeat(2000)}1${'}'.repeat(2000)}`, headers: { 'content-type': 'application/json' } }, 400, { body: Array })
      await refused(t, app, { method, url, payload: { ...ada, name: 'x'.repeat(40 * 1024) } }, 413)
    }
  })

  t.test(`${name}: ids that are not positive integers`, async t => {
    const app = await build(t)
    for (const id of ['0', '-1', 'abc', '1.5', '1e3', '0x10', '%20', '1;drop table students']) {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        await refused(t, app, { method, url: `${base}/${id}`, payload: method === 'PUT' ? { name: 'X' } : undefined }, 400, { id: Array })
      }
    }
  })

  t.test(`${name}: bad update bodies`, async t => {
    const app = await build(t)
    const { id } = (await app.inject({ method: 'POST', url: base, payload: ada })).json()
    const url = `${base}/${id}`
    await refused(t, app, { method: 'PUT', url, payload: { name: '' } }, 400, { name: ['must not be empty'] })
    await refused(t, app, { method: 'PUT', url, payload: { name: 'Ok', admin: true } }, 400, { admin: ['is not allowed'] })
    await refused(t, app, { method: 'PUT', url, payload: { name: 'Ada\u0000' } }, 400)
  })
}

t.test('variant A: PUT takes the name and nothing else', async t => {
  const app = await build(t)
  const { id } = (await app.inject({ method: 'POST', url: '/api/v1/students', payload: ada })).json()
  const url = `/api/v1/students/${id}`
  await refused(t, app, { method: 'PUT', url, payload: { email: 'other@example.com' } }, 400, { email: ['is not allowed'], name: ['is required'] })
  await refused(t, app, { method: 'PUT', url, payload: { name: 'Ada', age: 40 } }, 400, { age: ['is not allowed'] })
  await refused(t, app, { method: 'PUT', url, payload: {} }, 400, { name: ['is required'] })
})

t.test('variant B: updates take a non-empty subset of the fields', async t => {
  const app = await build(t)
  const { id } = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json()
  for (const method of ['PUT', 'PATCH'] as const) {
    const url = `/students/${id}`
    await refused(t, app, { method, url, payload: {} }, 400, { body: ['must have at least one property'] })
    await refused(t, app, { method, url, payload: { age: 151 } }, 400, { age: ['must be <= 150'] })
    await refused(t, app, { method, url, payload: { dob: '2023-02-29' } }, 400, { dob: Array })
    await refused(t, app, { method, url, payload: { email: 'x@' } }, 400, { email: Array })
    await refused(t, app, { method, url, payload: { age: 30, id: 9 } }, 400, { id: ['is not allowed'] })
    await refused(t, app, { method, url, payload: { updated_at: today } }, 400, { updated_at: ['is not allowed'] })
  }
})

t.test('unknown routes answer the error body', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/nowhere?x=1' })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { success: false, statusCode: 404, error: 'Not Found', code: 'route_not_found', message: 'Route GET /nowhere not found' })
})

t.test('a database failure answers 500 without SQL', async t => {
  const app = await build(t)
  await app.knex.raw('alter table students rename to students_gone')
  for (const request of [
    { method: 'GET', url: '/students' },
    { method: 'POST', url: '/students', payload: ada },
    { method: 'PATCH', url: '/students/1', payload: { age: 3 } },
    { method: 'PATCH', url: '/students/1', payload: { email: 'x@example.com' } }
  ] as const) {
    const res = await app.inject(request)
    t.equal(res.statusCode, 500, `${request.method} ${request.url}`)
    t.same(res.json(), { success: false, statusCode: 500, error: 'Internal Server Error', code: 'internal_error', message: 'The server failed to answer this request' })
  }
})
