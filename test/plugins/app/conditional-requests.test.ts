import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from '../../routes/api/accounts.js'
import { ada, student } from '../../routes/students/fixtures.js'

/** Each record kind: where one lives, how it is made, and a change its update takes. */
async function records (app: FastifyInstance) {
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const post = async (url: string, payload: object) => {
    const res = await app.inject({ method: 'POST', url, headers: admin, payload })
    if (res.statusCode !== 201) throw new Error(res.body)
    return res.headers.location as string
  }
  return {
    admin,
    kinds: [
      { name: 'student (variant A)', url: await post('/api/v1/students', student(1)), change: { name: 'Renamed' } },
      { name: 'student (variant B)', url: await post('/students', student(2)), change: { age: 99 } },
      { name: 'client', url: await post('/api/clients', client), change: { city: 'Gdańsk' } },
      { name: 'role', url: await post('/api/roles', { name: 'Editor', permission: ['client-list'] }), change: { name: 'Writer' } },
      { name: 'user', url: await post('/api/users', { name: 'Bob', email: 'bob@example.com', password: 'correct horse battery', c_password: 'correct horse battery' }), change: { name: 'Robert' } }
    ]
  }
}

t.test('every record has a strong ETag: 304 to If-None-Match, a new tag on every change', async t => {
  const app = await build(t)
  const { admin, kinds } = await records(app)
  for (const { name, url, change } of kinds) {
    await t.test(name, async t => {
      const read = await app.inject({ url, headers: admin })
      const etag = read.headers.etag as string
      t.match(etag, /^"[^"]+"$/, 'a strong tag')
      const head = await app.inject({ method: 'HEAD', url, headers: admin })
      t.equal(head.headers.etag, etag, 'HEAD sends it too')

      for (const header of [etag, `"other", ${etag}`, `W/${etag}`, '*']) {
        const again = await app.inject({ url, headers: { ...admin, 'if-none-match': header } })
        t.equal(again.statusCode, 304, `If-None-Match: ${header}`)
        t.equal(again.body, '', 'no body')
        t.equal(again.headers.etag, etag, 'the tag repeated')
      }
      t.equal((await app.inject({ method: 'HEAD', url, headers: { ...admin, 'if-none-match': etag } })).statusCode, 304, 'HEAD too')
      t.equal((await app.inject({ url, headers: { ...admin, 'if-none-match': '"stale"' } })).statusCode, 200, 'another tag: the record')

      const updated = await app.inject({ method: 'PATCH', url, headers: admin, payload: change })
      // Variant A takes PUT only.
      const changed = updated.statusCode === 405 ? await app.inject({ method: 'PUT', url, headers: admin, payload: change }) : updated
      t.equal(changed.statusCode, 200)
      t.not(changed.headers.etag, etag, 'an update sends the new tag')
      const reread = await app.inject({ url, headers: { ...admin, 'if-none-match': etag } })
      t.equal(reread.statusCode, 200, 'the old tag no longer holds')
      t.equal(reread.headers.etag, changed.headers.etag, 'the update\'s tag is the record\'s')
    })
  }
})

t.test('a role\'s tag changes with its permissions, a user\'s with their roles and their roles\' names', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const role = await roleWithPermissions(app, 'Reader', ['client-list'])
  const holder = await userWithRoles(app, ['Reader'])
  const tagOf = async (url: string, headers = admin) => (await app.inject({ url, headers })).headers.etag
  const roleTag = await tagOf(`/api/roles/${role.id}`)
  const userTag = await tagOf(`/api/users/${holder.id}`)
  const profileTag = await tagOf('/api/profile', bearer(holder.token))

  await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: admin, payload: { permission: ['client-list', 'client-edit'] } })
  t.not(await tagOf(`/api/roles/${role.id}`), roleTag, 'the role\'s permissions changed')
  t.not(await tagOf('/api/profile', bearer(holder.token)), profileTag, 'the holder\'s profile lists the new permission')
  t.equal(await tagOf(`/api/users/${holder.id}`), userTag, 'the holder shows role names only: unchanged')

  await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: admin, payload: { name: 'Viewer' } })
  const renamed = await tagOf(`/api/users/${holder.id}`)
  t.not(renamed, userTag, 'the holder\'s role was renamed')

  await app.inject({ method: 'PATCH', url: `/api/users/${holder.id}`, headers: admin, payload: { roles: [] } })
  t.not(await tagOf(`/api/users/${holder.id}`), renamed, 'the holder\'s roles changed')
})

t.test('If-Match: a stale tag gets 412 with the current tag and changes nothing; the current tag or * writes', async t => {
  const app = await build(t)
  const { admin, kinds } = await records(app)
  for (const { name, url, change } of kinds) {
    await t.test(name, async t => {
      const method = name.includes('variant A') ? 'PUT' : 'PATCH'
      const read = await app.inject({ url, headers: admin })
      const etag = read.headers.etag as string
      for (const stale of ['"stale"', `W/${etag}`, '"a", "b"']) {
        const refused = await app.inject({ method, url, headers: { ...admin, 'if-match': stale }, payload: change })
        t.equal(refused.statusCode, 412, `If-Match: ${stale}`)
        t.match(refused.json(), { success: false, statusCode: 412, error: 'Precondition Failed', message: /changed/ })
        t.equal(refused.headers.etag, etag, 'the current tag comes with it')
        const deleted = await app.inject({ method: 'DELETE', url, headers: { ...admin, 'if-match': stale } })
        t.equal(deleted.statusCode, 412, `DELETE, If-Match: ${stale}`)
      }
      t.same((await app.inject({ url, headers: admin })).json(), read.json(), 'nothing was written')

      const written = await app.inject({ method, url, headers: { ...admin, 'if-match': `"other", ${etag}` }, payload: change })
      t.equal(written.statusCode, 200, 'a list holding the current tag')
      const next = written.headers.etag as string
      t.equal((await app.inject({ method, url, headers: { ...admin, 'if-match': etag }, payload: change })).statusCode, 412, 'the tag it replaced no longer holds')
      t.equal((await app.inject({ method, url, headers: { ...admin, 'if-match': '*' }, payload: change })).statusCode, 200, '* holds for any version')
      t.equal((await app.inject({ method: 'DELETE', url, headers: { ...admin, 'if-match': next } })).statusCode, 412, 'DELETE with the replaced tag')
      const current = (await app.inject({ url, headers: admin })).headers.etag as string
      t.ok([200, 204].includes((await app.inject({ method: 'DELETE', url, headers: { ...admin, 'if-match': current } })).statusCode), 'DELETE with the current tag')
      const gone = await app.inject({ method, url, headers: { ...admin, 'if-match': '*' }, payload: change })
      t.equal(gone.statusCode, 404, 'a record that is gone is 404, whatever If-Match says')
      t.equal((await app.inject({ method: 'DELETE', url, headers: { ...admin, 'if-match': current } })).statusCode, 404)
    })
  }
})

t.test('an id past PostgreSQL\'s integers names no record: 404 whatever If-Match says', async t => {
  const app = await build(t)
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  for (const url of ['/students/99999999999', '/api/v1/students/99999999999', '/api/clients/99999999999']) {
    t.equal((await app.inject({ method: 'PUT', url, headers: { ...admin, 'if-match': '"1"' }, payload: url.includes('clients') ? client : { name: 'X' } })).statusCode, 404, `PUT ${url}`)
    t.equal((await app.inject({ method: 'DELETE', url, headers: { ...admin, 'if-match': '"1"' } })).statusCode, 404, `DELETE ${url}`)
  }
})

t.test('malformed If-Match or If-None-Match gets 400 naming the header', async t => {
  const app = await build(t)
  const url = (await app.inject({ method: 'POST', url: '/students', payload: ada })).headers.location as string
  for (const header of ['abc', '"unterminated', '"a",', '"a" "b"', 'W/abc', '', ',']) {
    const put = await app.inject({ method: 'PATCH', url, headers: { 'if-match': header }, payload: { age: 1 } })
    t.equal(put.statusCode, 400, `If-Match: ${JSON.stringify(header)}`)
    t.match(put.json(), { statusCode: 400, data: { 'if-match': [String] } })
    const get = await app.inject({ url, headers: { 'if-none-match': header } })
    t.equal(get.statusCode, 400, `If-None-Match: ${JSON.stringify(header)}`)
    t.match(get.json(), { statusCode: 400, data: { 'if-none-match': [String] } })
  }
  t.equal((await app.inject({ url })).json().age, ada.age, 'nothing was written')
})

t.test('REQUIRE_IF_MATCH: updates and deletes without If-Match get 428; with it, they write', async t => {
  const app = await build(t, { requireIfMatch: true })
  const url = (await app.inject({ method: 'POST', url: '/students', payload: ada })).headers.location as string
  const refused = await app.inject({ method: 'PATCH', url, payload: { age: 1 } })
  t.equal(refused.statusCode, 428)
  t.match(refused.json(), { success: false, statusCode: 428, error: 'Precondition Required', message: /If-Match/ })
  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 428)
  const etag = (await app.inject({ url })).headers.etag as string
  t.equal((await app.inject({ method: 'PATCH', url, headers: { 'if-match': etag }, payload: { age: 1 } })).statusCode, 200)
})

t.test('list pages carry a weak tag, and answer 304 while the page is the same', async t => {
  const app = await build(t)
  const { admin } = await records(app)
  for (const url of ['/students', '/api/v1/students?sort=-name', '/api/clients', '/api/roles', '/api/users?count=exact']) {
    const page = await app.inject({ url, headers: admin })
    const etag = page.headers.etag as string
    t.match(etag, /^W\/"[^"]+"$/, `${url}: a weak tag`)
    t.equal((await app.inject({ url, headers: { ...admin, 'if-none-match': etag } })).statusCode, 304, `${url}: 304`)
  }
  const etag = (await app.inject({ url: '/students' })).headers.etag as string
  await app.inject({ method: 'POST', url: '/students', payload: ada })
  const changed = await app.inject({ url: '/students', headers: { 'if-none-match': etag } })
  t.equal(changed.statusCode, 200, 'a new student changes the page')
  t.not(changed.headers.etag, etag)
})

t.test('clients that send none of these headers get the answers they always did', async t => {
  const app = await build(t)
  const created = await app.inject({ method: 'POST', url: '/students', payload: ada })
  t.equal(created.statusCode, 201)
  t.notOk(created.headers['idempotent-replayed'])
  const url = created.headers.location as string
  t.match((await app.inject({ method: 'PUT', url, payload: { name: 'Ada' } })).json(), { ...created.json(), name: 'Ada', updated_at: String })
  t.equal((await app.inject({ method: 'DELETE', url })).statusCode, 204)
})

t.test('20 concurrent PUTs over HTTP with the same If-Match: one 200, the rest 412, and the record is the winner\'s', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const admin = bearer((await userWithRoles(app, ['Admin'])).token)
  const kinds = [
    { name: 'student', url: '/students', payload: ada as object, record: (body: any) => body },
    { name: 'client', url: '/api/clients', payload: client as object, record: (body: any) => body.data }
  ]
  for (const { name, url, payload, record } of kinds) {
    await t.test(name, async t => {
      const created = await app.inject({ method: 'POST', url, headers: admin, payload })
      const location = `http://127.0.0.1:${port}${created.headers.location as string}`
      const etag = created.headers.etag as string
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => fetch(location, {
        method: 'PUT',
        headers: { ...admin, 'content-type': 'application/json', 'if-match': etag },
        body: JSON.stringify({ ...payload, name: `Writer ${i}` })
      }).then(async res => ({ status: res.status, etag: res.headers.get('etag'), body: await res.json() }))))
      const won = answers.filter(answer => answer.status === 200)
      t.equal(won.length, 1, 'exactly one writer won')
      t.same(answers.filter(answer => answer.status !== 200).map(answer => answer.status), Array(19).fill(412), 'the others got 412')
      const stored = await fetch(location, { headers: admin })
      t.same(record(await stored.json()), record(won[0]!.body), 'the record is the winner\'s')
      t.equal(stored.headers.get('etag'), won[0]!.etag, 'with the winner\'s tag')
      t.equal(record(won[0]!.body).name, `Writer ${answers.indexOf(won[0]!)}`, 'as the winner sent it')
    })
  }
})
