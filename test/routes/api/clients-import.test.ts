import t from 'tap'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'

const CSV = { 'content-type': 'text/csv' }
const fields = Object.keys(client) as Array<keyof typeof client>
const csv = (rows: Array<typeof client>) => [fields.join(','), ...rows.map(row => fields.map(field => row[field]).join(','))].join('\n') + '\n'

t.test('an import of clients: client-create, every row or none, the counts in the envelope, an event each', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await roleWithPermissions(app, 'Reader', ['client-list'])
  const reader = await userWithRoles(app, ['Reader'])
  const rows = [client, { ...client, name: 'Beta S.A.' }, { ...client, name: 'Gamma', email: 'same@example.com' }, { ...client, name: 'Delta', email: 'same@example.com' }]

  const forbidden = await app.inject({ method: 'POST', url: '/api/clients/import', headers: { ...bearer(reader.token), ...CSV }, payload: csv(rows) })
  t.match(forbidden.json(), { statusCode: 403, code: 'permission_denied' })
  const anonymous = await app.inject({ method: 'POST', url: '/api/clients/import', headers: CSV, payload: csv(rows) })
  t.match(anonymous.json(), { statusCode: 401 })

  const refused = await app.inject({ method: 'POST', url: '/api/clients/import', headers: { ...bearer(admin.token), ...CSV }, payload: csv([...rows, { ...client, post_code: '1234567' }]) })
  t.match(refused.json(), { statusCode: 422, code: 'invalid_rows', param: '6.post_code', data: { '6.post_code': [/must match pattern/] } })
  t.equal(Number((await app.knex('clients').count({ n: '*' }))[0]!.n), 0, 'nothing written')

  const res = await app.inject({ method: 'POST', url: '/api/clients/import', headers: { ...bearer(admin.token), ...CSV }, payload: csv(rows) })
  t.equal(res.statusCode, 200, res.body)
  t.same(res.json(), { success: true, message: '4 clients imported', data: { inserted: 4, updated: 0, unchanged: 0, skipped: 0, failed: 0, errors: [] } })
  const list = (await app.inject({ url: '/api/clients', headers: bearer(admin.token) })).json<{ data: Array<{ id: number, name: string }> }>().data
  t.same(list.map(row => row.name), rows.map(row => row.name), 'two clients may share an address')
  const events = await app.inject({ url: '/api/events?type[eq]=client.created', headers: bearer(admin.token) })
  t.same(events.json<{ data: Array<{ resource_id: number }> }>().data.map(event => event.resource_id), list.map(row => row.id))
  const ignored = await app.inject({ method: 'POST', url: '/api/clients/import?on_conflict=update', headers: { ...bearer(admin.token), ...CSV }, payload: csv([client]) })
  t.match(ignored.json(), { data: { inserted: 1, updated: 0 } }, 'no on_conflict: an unknown query parameter is ignored, as everywhere')
})
