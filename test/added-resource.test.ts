import path from 'node:path'
import t, { type Test } from 'tap'
import { build } from './helper.js'
import { bearer, userWithRoles } from './routes/api/accounts.js'
import { fuzzWrites } from './fuzz/writes.js'
import { up as createNotes } from './added-resource/db/migrations/20261124000000_create_notes.js'

// test/added-resource/ holds a resource added as docs/adding-a-resource.md says: a migration,
// and one folder (routes/api/(authenticated)/notes/) that nothing else names.
const ROUTES = path.join(import.meta.dirname, 'added-resource', 'routes')

async function setUp (t: Test) {
  const app = await build(t, config => { Object.assign(config.auth.rateLimit, { perIp: 1_000_000, perEmail: 1_000_000 }) }, { routes: ROUTES })
  await createNotes(app.knex)
  const admin = await userWithRoles(app, ['Admin'])
  return { app, headers: bearer(admin.token), token: admin.token }
}

t.test('a resource added as the guide says: pages, filters, sorts, permissions, error bodies, its boolean column', async t => {
  const { app, headers } = await setUp(t)
  for (const title of ['one', 'two', 'three']) {
    const created = await app.inject({ method: 'POST', url: '/api/notes', headers, payload: { title, pinned: title === 'two' } })
    t.equal(created.statusCode, 201, `created ${title}`)
    t.match(created.headers.location, /^\/api\/notes\/\d+$/)
  }

  const first = await app.inject({ url: '/api/notes?limit=2', headers })
  t.equal(first.statusCode, 200)
  t.match(first.json(), { success: true, data: [{ title: 'one', pinned: false }, { title: 'two', pinned: true }] })
  t.match(first.headers.link, /^<\/api\/notes\?limit=2&after=\d+>; rel="next"$/, 'a Link to the next page')
  const next = await app.inject({ url: /<([^>]+)>/.exec(String(first.headers.link))![1]!, headers })
  t.match(next.json(), { success: true, data: [{ title: 'three' }] })
  t.equal(next.headers.link, undefined, 'the last page')
  const pinned = await app.inject({ url: '/api/notes?pinned[eq]=true&count=exact', headers })
  t.match(pinned.json(), { success: true, data: [{ title: 'two' }] }, 'filtered on its boolean column')
  t.equal(pinned.headers['x-total-count'], '1', 'and counted')
  const sorted = await app.inject({ url: '/api/notes?sort=-pinned,title', headers })
  t.same(sorted.json().data.map((note: { title: string }) => note.title), ['two', 'one', 'three'], 'sorted on it')

  const missing = await app.inject({ url: '/api/notes/999999', headers })
  t.equal(missing.statusCode, 404)
  t.same(missing.json(), { success: false, statusCode: 404, error: 'Not Found', code: 'not_found', message: 'Note 999999 not found' })
  const bad = await app.inject({ method: 'POST', url: '/api/notes', headers, payload: { title: '', pinned: 'yes' } })
  t.equal(bad.statusCode, 400)
  t.match(bad.json(), { success: false, statusCode: 400, error: 'Bad Request' })
  t.equal((await app.inject({ url: '/api/notes' })).statusCode, 401, 'behind the token check of its folder')
  const user = await userWithRoles(app, ['User'])
  t.equal((await app.inject({ url: '/api/notes', headers: bearer(user.token) })).statusCode, 403, 'behind its permissions')
})

t.test('a resource added as the guide says is in the OpenAPI document, with its tag and components', async t => {
  const { app } = await setUp(t)
  const document = (await app.inject({ url: '/documentation/json' })).json()
  t.same(Object.keys(document.paths).filter(path => path.startsWith('/api/notes')), ['/api/notes', '/api/notes/{id}'])
  t.same(Object.values(document.paths['/api/notes/{id}']).map(operation => (operation as { operationId: string }).operationId), ['notes.show', 'notes.patch', 'notes.destroy'])
  t.same(document.tags.filter((tag: { name: string }) => tag.name === 'notes'), [{ name: 'notes', description: 'Notes, behind the note-* permissions' }], 'its tag, declared once')
  t.ok(document.components.schemas.Note && document.components.schemas.NoteInput, 'its shared schemas are components')
  t.same(Object.keys(document.webhooks).filter(type => type.startsWith('note.')), ['note.created', 'note.updated', 'note.deleted'], 'its events are webhooks\' types')
  t.same(document.webhooks['note.created'].post.requestBody.content['application/json'].schema.allOf[1].properties.data, { $ref: '#/components/schemas/Note' }, 'each with a note as its data')
})

t.test('a resource added as the guide says is fuzzed as every other', async t => {
  const { app, headers, token } = await setUp(t)
  const { id } = (await app.inject({ method: 'POST', url: '/api/notes', headers, payload: { title: 'kept', pinned: false } })).json().data
  await fuzzWrites(t, app, { token, ids: { notes: id }, paths: path => path.startsWith('/api/notes') })
})

t.test('a resource added as the guide says gets what every write gets: ETag and If-Match, Idempotency-Key, audit entries and outbox rows', async t => {
  const { app, headers } = await setUp(t)
  const create = () => app.inject({ method: 'POST', url: '/api/notes', headers: { ...headers, 'idempotency-key': 'one-note' }, payload: { title: 'once', pinned: false } })
  const created = await create()
  const again = await create()
  t.equal(created.statusCode, 201)
  t.equal(again.headers['idempotent-replayed'], 'true', 'a retry is answered from the kept answer')
  t.same(again.json(), created.json())
  const { id } = created.json().data
  t.equal((await app.knex('notes').count({ n: '*' }))[0]!.n, '1', 'and writes nothing again')

  const shown = await app.inject({ url: `/api/notes/${id}`, headers })
  t.equal(shown.headers.etag, created.headers.etag, 'a read carries the create\'s tag')
  t.equal((await app.inject({ url: `/api/notes/${id}`, headers: { ...headers, 'if-none-match': shown.headers.etag as string } })).statusCode, 304)
  const changed = await app.inject({ method: 'PATCH', url: `/api/notes/${id}`, headers: { ...headers, 'if-match': shown.headers.etag as string }, payload: { pinned: true } })
  t.equal(changed.statusCode, 200)
  const stale = await app.inject({ method: 'DELETE', url: `/api/notes/${id}`, headers: { ...headers, 'if-match': shown.headers.etag as string } })
  t.equal(stale.statusCode, 412)
  t.equal(stale.headers.etag, changed.headers.etag, '412 with the current tag')
  t.equal(stale.json().code, 'precondition_failed')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/notes/${id}`, headers: { ...headers, 'if-match': changed.headers.etag as string } })).statusCode, 200)

  const audited = await app.inject({ url: `/api/audit?resource[eq]=note&resource_id[eq]=${id}&sort=id`, headers })
  t.same(audited.json().data.map((entry: { action: string }) => entry.action), ['create', 'update', 'delete'], 'audited, with no line naming notes outside their folder')
  const rows = await app.knex('change_outbox').where({ resource: 'note', resource_id: id }).orderBy('id').select('action', 'changed')
  t.same(rows, [{ action: 'create', changed: null }, { action: 'update', changed: ['pinned'] }, { action: 'delete', changed: null }], 'and outboxed')
})
