import t from 'tap'
import { build } from '../../helper.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'

interface Outcome { index: number, status: number, id?: number, etag?: string, error?: { code: string, data: Record<string, string[]> } }

t.test('a batch of clients: client-create, each row made as a single create, its outcome in the envelope', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await roleWithPermissions(app, 'Reader', ['client-list'])
  const reader = await userWithRoles(app, ['Reader'])
  const rows = [client, { ...client, name: 'Beta S.A.' }, { ...client, post_code: '1234567' }]

  const forbidden = await app.inject({ method: 'POST', url: '/api/clients/batch', headers: bearer(reader.token), payload: [client] })
  t.match(forbidden.json(), { statusCode: 403, code: 'permission_denied' })

  const atomic = await app.inject({ method: 'POST', url: '/api/clients/batch', headers: bearer(admin.token), payload: rows })
  t.match(atomic.json(), { statusCode: 422, code: 'invalid_rows', param: '2.post_code', data: { '2.post_code': [/must match pattern/] } })

  const res = await app.inject({ method: 'POST', url: '/api/clients/batch?mode=per_row', headers: bearer(admin.token), payload: rows })
  t.equal(res.statusCode, 200)
  const body = res.json<{ success: true, message: string, data: Outcome[] }>()
  t.match(body, { success: true, message: '2 of 3 clients created' })
  t.same(body.data.map(outcome => [outcome.index, outcome.status, outcome.error?.code]), [[0, 201, undefined], [1, 201, undefined], [2, 400, 'invalid_body']])
  for (const outcome of body.data.slice(0, 2)) {
    const shown = await app.inject({ url: `/api/clients/${outcome.id!}`, headers: bearer(admin.token) })
    t.equal(shown.headers.etag, outcome.etag)
    t.match(shown.json().data, rows[outcome.index])
  }
  const events = await app.inject({ url: '/api/events?type[eq]=client.created', headers: bearer(admin.token) })
  t.same(events.json<{ data: Array<{ resource_id: number }> }>().data.map(event => event.resource_id), body.data.slice(0, 2).map(outcome => outcome.id))
})
