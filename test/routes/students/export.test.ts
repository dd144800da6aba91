import http from 'node:http'
import t from 'tap'
import { build, within } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from '../api/accounts.js'
import { student } from './fixtures.js'

const NDJSON = { accept: 'application/x-ndjson' }
const CSV = { accept: 'text/csv' }

/** Inserts `n` students straight into the table, `student(from)` on. */
async function seed (app: Awaited<ReturnType<typeof build>>, n: number, from = 0) {
  await app.knex('students').insert(Array.from({ length: n }, (_, i) => student(from + i)))
}

t.test('Accept: application/x-ndjson streams every student the filters and sort match, each line the JSON the list answers', async t => {
  const app = await build(t)
  await seed(app, 30)
  for (const query of ['', '?sort=-age,name', '?age[gte]=40&sort=dob', '?limit=5']) {
    const json = await app.inject({ url: `/students${query}${query ? '&' : '?'}limit=1000`.replace('limit=5&limit=1000', 'limit=1000') })
    const exported = await app.inject({ url: `/students${query}`, headers: NDJSON })
    t.equal(exported.statusCode, 200)
    t.match(exported.headers['content-type'], /^application\/x-ndjson/)
    t.equal(exported.headers['content-disposition'], 'attachment; filename="students.ndjson"')
    t.notOk(exported.headers.link, 'no page links')
    t.ok(exported.body.endsWith('\n'))
    t.same(exported.body.trimEnd().split('\n').map(line => JSON.parse(line)), json.json(), `${query || 'the whole list'}: the rows of the JSON list, in its order, no page limit`)
  }
  const none = await app.inject({ url: '/students?age[gt]=150', headers: NDJSON })
  t.equal(none.body, '', 'no row, no line')
})

t.test('Accept: text/csv streams a header and a line a student, quoted where a field needs it, fields as the JSON shows them', async t => {
  const app = await build(t)
  await app.knex('students').insert({ ...student(1), name: 'Lovelace, Ada "the Countess"\nof Lovelace' })
  await seed(app, 2, 2)
  const json = (await app.inject({ url: '/students' })).json<Array<Record<string, string | number>>>()
  const res = await app.inject({ url: '/students', headers: { accept: 'text/csv, application/json;q=0.5' } })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/csv; charset=utf-8/)
  const line = (row: Record<string, string | number>, name = String(row.name)) => [row.id, name, row.email, row.age, row.dob, row.created_at, row.updated_at].join(',')
  t.equal(res.body, [
    'id,name,email,age,dob,created_at,updated_at',
    line(json[0]!, '"Lovelace, Ada ""the Countess""\nof Lovelace"'),
    line(json[1]!),
    line(json[2]!),
    ''
  ].join('\n'), 'a header, then a line a row: quoted where a field needs it, each field as the JSON shows it')

  t.match((await app.inject({ url: '/students', headers: { accept: 'application/json, text/csv;q=0.5' } })).headers['content-type'], /^application\/json/, 'JSON where the client prefers it')
  t.match((await app.inject({ url: '/students', headers: { accept: '*/*' } })).headers['content-type'], /^application\/json/)
  const head = await app.inject({ method: 'HEAD', url: '/students', headers: CSV })
  t.match(head.headers['content-type'], /^application\/json/, 'a HEAD reads no export')
  t.match((await app.inject({ url: '/api/v1/students', headers: CSV })).headers['content-type'], /^application\/json/, 'variant A lists in JSON only')
})

t.test('an export over HTTP: read a fetch at a time, from one snapshot; a client that leaves ends its query', async t => {
  const app = await build(t)
  await seed(app, 5000)
  const address = await app.listen({ port: 0, host: '127.0.0.1' })
  const get = async () => await new Promise<http.IncomingMessage>((resolve, reject) => {
    http.get(`${address}/students`, { headers: NDJSON, agent: false }, resolve).on('error', reject)
  })

  const res = await get()
  res.setEncoding('utf8')
  const chunks: string[] = []
  const first = new Promise(resolve => res.once('data', (chunk: string) => { chunks.push(chunk); resolve(undefined) }))
  await first
  res.pause()
  // A student made once the export has begun is not in it, wherever it would sort.
  await app.knex('students').insert(student(9999))
  res.on('data', (chunk: string) => chunks.push(chunk))
  res.resume()
  await new Promise(resolve => res.on('end', resolve))
  const ids = chunks.join('').trimEnd().split('\n').map(line => (JSON.parse(line) as { id: number }).id)
  t.equal(ids.length, 5000, 'every row of the snapshot, and not the one made after')
  t.ok(ids.every((id, i) => i === 0 || id > ids[i - 1]!), 'in id order')

  const inTransaction = async () => Number((await app.knex.raw("select count(*) as n from pg_stat_activity where datname = current_database() and state like 'idle in transaction%'")).rows[0].n)
  const gone = await get()
  await new Promise(resolve => gone.once('data', resolve))
  gone.destroy()
  t.ok(await within(5_000, async () => await inTransaction() === 0), 'the export\'s transaction ended with its client')
  t.equal((await app.inject({ url: '/students?limit=1' })).statusCode, 200, 'the service reads on')
})

t.test('clients export behind client-list, without the envelope', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await roleWithPermissions(app, 'Nobody', [])
  const nobody = await userWithRoles(app, ['Nobody'])
  await app.knex('clients').insert([client, { ...client, name: 'Beta' }])
  t.match((await app.inject({ url: '/api/clients', headers: { ...bearer(nobody.token), ...CSV } })).json(), { statusCode: 403, code: 'permission_denied' })
  const res = await app.inject({ url: '/api/clients?sort=name', headers: { ...bearer(admin.token), ...NDJSON } })
  t.equal(res.headers['content-disposition'], 'attachment; filename="clients.ndjson"')
  t.same(res.body.trimEnd().split('\n').map(line => JSON.parse(line)), (await app.inject({ url: '/api/clients?sort=name', headers: bearer(admin.token) })).json().data)
})
