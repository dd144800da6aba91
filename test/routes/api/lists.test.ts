import t from 'tap'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'

t.test('users filter by the roles they hold, roles by their permissions, clients by their fields', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'], 'admin@example.com')
  const headers = bearer(admin.token)
  await roleWithPermissions(app, 'Auditor', ['user-list', 'role-list'])
  const auditor = await userWithRoles(app, ['Auditor'], 'auditor@example.com')
  const both = await userWithRoles(app, ['Auditor', 'User'], 'both@example.com')
  const plain = await userWithRoles(app, ['User'], 'plain@example.com')
  const get = async (url: string) => {
    const res = await app.inject({ url, headers })
    t.equal(res.statusCode, 200, url)
    return res.json().data as { id: number, name: string }[]
  }
  const ids = (rows: { id: number }[]) => rows.map(row => row.id)

  t.test('role[eq], in any case; role[in]; role[ne]', async t => {
    t.same(ids(await get('/api/users?role[eq]=auditor')), [auditor.id, both.id])
    t.same(ids(await get('/api/users?role[in]=Admin,User')), [admin.id, both.id, plain.id])
    t.same(ids(await get('/api/users?role[ne]=User')), [admin.id, auditor.id])
    t.same(ids(await get('/api/users?role[eq]=Auditor&email[starts_with]=BOTH')), [both.id], 'with another field')
    t.same(ids(await get('/api/users?role[eq]=Nobody')), [])
  })

  t.test('users sorted by name descending, with a count', async t => {
    const res = await app.inject({ url: '/api/users?sort=-name,id&limit=2&count=exact', headers })
    t.equal(res.headers['x-total-count'], '4')
    t.equal(res.json().data.length, 2)
    t.match(res.headers.link, /cursor=/)
  })

  t.test('permission[eq] and [ne] on roles', async t => {
    const names = async (url: string) => (await get(url)).map(row => row.name)
    t.same(await names('/api/roles?permission[eq]=role-list'), ['Admin', 'Auditor'])
    t.same(await names('/api/roles?permission[ne]=user-delete&sort=-name'), ['User', 'Auditor'])
  })

  t.test('clients by city, sorted by name, every page', async t => {
    for (const [name, city] of [['Bravo', 'Kraków'], ['Alpha', 'Warszawa'], ['Charlie', 'warszawa'], ['Delta', 'Gdańsk']]) {
      const res = await app.inject({ method: 'POST', url: '/api/clients', headers, payload: { ...client, name, city } })
      t.equal(res.statusCode, 201)
    }
    const first = await app.inject({ url: '/api/clients?city[contains]=WARSZ&sort=-name&limit=1&count=exact', headers })
    t.same(first.json().data.map((c: { name: string }) => c.name), ['Charlie'])
    t.equal(first.headers['x-total-count'], '2')
    const next = /<([^>]+)>/.exec(String(first.headers.link))![1]!
    t.match(next, /^\/api\/clients\?city\[contains\]=WARSZ&sort=-name&limit=1&cursor=/)
    const second = await app.inject({ url: next, headers })
    t.same(second.json().data.map((c: { name: string }) => c.name), ['Alpha'])
    t.equal(second.headers.link, undefined, 'the last page links nowhere')
  })

  t.test('an unknown operator on a relation filter is 400 naming it', async t => {
    const res = await app.inject({ url: '/api/users?role[contains]=Adm', headers })
    t.equal(res.statusCode, 400)
    t.match(res.json(), { data: { 'role[contains]': [String] } })
  })
})
