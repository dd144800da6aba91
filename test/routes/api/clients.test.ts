import t from 'tap'
import { build } from '../../helper.js'
import { bearer, client, userWithRoles } from './accounts.js'

t.test('clients: an admin creates, reads, lists, replaces, patches and soft-deletes a client', async t => {
  const app = await build(t)
  const { token } = await userWithRoles(app, ['Admin'])
  const headers = bearer(token)
  let data: { id: number }

  await t.test('an admin creates a client, answered 201 with its location', async t => {
    const created = await app.inject({ method: 'POST', url: '/api/clients', headers: { ...headers, 'x-requested-with': 'XMLHttpRequest' }, payload: client })
    t.equal(created.statusCode, 201)
    data = created.json().data
    t.match(created.json(), { success: true, message: 'Client created', data: { ...client, id: Number } })
    t.equal(created.headers.location, `/api/clients/${data.id}`)
  })

  await t.test('the client is read back and listed', async t => {
    t.same((await app.inject({ url: `/api/clients/${data.id}`, headers })).json(), { success: true, data })
    t.same((await app.inject({ url: '/api/clients', headers })).json(), { success: true, data: [data] })
  })

  await t.test('PUT replaces the client, and refuses a body without every field', async t => {
    const put = await app.inject({ method: 'PUT', url: `/api/clients/${data.id}`, headers, payload: { ...client, city: 'Gdańsk' } })
    t.match(put.json().data, { ...client, city: 'Gdańsk' })
    const partial = await app.inject({ method: 'PUT', url: `/api/clients/${data.id}`, headers, payload: { city: 'Gdańsk' } })
    t.equal(partial.statusCode, 400, 'PUT takes every field')
    t.match(partial.json().data, { name: ['is required'] })
  })

  await t.test('PATCH changes only the fields given', async t => {
    const patch = await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { post_code: '80-001' } })
    t.match(patch.json().data, { city: 'Gdańsk', post_code: '80-001' })
  })

  await t.test('PATCH refuses a bad VAT number, post code, e-mail address or name, naming the field', async t => {
    for (const [field, value] of [['vat_number', '123456789'], ['vat_number', '12345678901'], ['post_code', '80001'], ['email', 'x'], ['name', ' ']]) {
      const bad = await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { [field as string]: value } })
      t.equal(bad.statusCode, 400, `${field} ${value}`)
      t.ok(bad.json().data[field as string], `names ${field}`)
    }
  })

  await t.test('DELETE answers 200 with the deleted client\'s id', async t => {
    const deleted = await app.inject({ method: 'DELETE', url: `/api/clients/${data.id}`, headers })
    t.equal(deleted.statusCode, 200)
    t.match(deleted.json(), { success: true, message: 'Client deleted', data: { id: data.id } })
  })

  await t.test('a deleted client is 404 to GET, PATCH and DELETE, and no longer listed', async t => {
    t.equal((await app.inject({ url: `/api/clients/${data.id}`, headers })).statusCode, 404)
    t.equal((await app.inject({ method: 'PATCH', url: `/api/clients/${data.id}`, headers, payload: { city: 'X' } })).statusCode, 404)
    t.equal((await app.inject({ method: 'DELETE', url: `/api/clients/${data.id}`, headers })).statusCode, 404)
    t.same((await app.inject({ url: '/api/clients', headers })).json().data, [])
  })

  await t.test('the deleted client\'s row is kept, with deleted_at set', async t => {
    t.ok((await app.knex('clients').where({ id: data.id }).first()).deleted_at, 'kept, with deleted_at')
  })
})
