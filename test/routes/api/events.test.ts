import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, buildApp } from '../../helper.js'
import { bearer, client, PASSWORD, roleWithPermissions, userWithRoles } from './accounts.js'

interface Event {
  id: number
  type: string
  resource: string
  resource_id: number
  occurred_at: string
  request_id: string | null
  data: Record<string, unknown>
  changed: string[] | null
}

const student = { name: 'Ada', email: 'ada@example.com', age: 20, dob: '2005-01-02' }

/** One page of GET `url` as `token` sees it, and the next page's URL. */
async function page (app: FastifyInstance, token: string, url: string): Promise<{ events: Event[], next: string }> {
  const res = await app.inject({ url, headers: bearer(token) })
  if (res.statusCode !== 200) throw new Error(`GET ${url}: ${res.statusCode} ${res.body}`)
  const next = /^<([^>]+)>; rel="next"$/.exec(res.headers.link as string)
  if (next === null) throw new Error(`GET ${url}: no next link`)
  return { events: res.json().data, next: next[1]! }
}

/** Every event from `url` on, following next until a page comes back empty; and where to poll from. */
async function readAll (app: FastifyInstance, token: string, url = '/api/events?limit=3'): Promise<{ events: Event[], next: string }> {
  const events: Event[] = []
  for (;;) {
    const read = await page(app, token, url)
    events.push(...read.events)
    if (read.events.length === 0) return { events, next: read.next }
    url = read.next
  }
}

t.test('every change of a student, client, role and user is an event, in commit order, typed, without secrets', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const auth = bearer(admin.token)

  const created = await app.inject({ method: 'POST', url: '/students', payload: student })
  t.equal(created.statusCode, 201)
  const id = created.json().id
  t.equal((await app.inject({ method: 'PUT', url: `/students/${id}`, payload: { ...student, age: 21 } })).statusCode, 200)
  t.equal((await app.inject({ method: 'PUT', url: `/api/v1/students/${id}`, payload: { name: 'Ada L.' } })).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/students/${id}` })).statusCode, 204)
  const clientCreated = await app.inject({ method: 'POST', url: '/api/clients', headers: auth, payload: client })
  t.equal(clientCreated.statusCode, 201)
  const role = await app.inject({ method: 'POST', url: '/api/roles', headers: auth, payload: { name: 'Reader', permission: ['client-list'] } })
  t.equal(role.statusCode, 201)
  const user = await app.inject({ method: 'POST', url: '/api/users', headers: auth, payload: { name: 'Ola', email: 'ola@example.com', password: PASSWORD, c_password: PASSWORD } })
  t.equal(user.statusCode, 201)
  const olaId = user.json().data.id
  t.equal((await app.inject({ method: 'PATCH', url: `/api/users/${olaId}`, headers: auth, payload: { password: 'another password', c_password: 'another password' } })).statusCode, 200)

  const { events } = await readAll(app, admin.token)
  t.same(events.map(event => event.type), [
    'student.created', 'student.updated', 'student.updated', 'student.deleted',
    'client.created', 'role.created', 'user.created', 'user.updated'
  ])
  t.same(events.map(event => event.id), events.map(event => event.id).sort((a, b) => a - b), 'in increasing id')
  const [made, updated, renamed, deleted] = events
  t.match(made, { resource: 'student', resource_id: id, data: { id, name: 'Ada', age: 20, email: 'ada@example.com' }, changed: null, request_id: created.headers['x-request-id'] })
  t.notOk('version' in made!.data, 'no version in the data')
  t.match(updated, { data: { age: 21 }, changed: ['age'] })
  t.match(renamed, { data: { name: 'Ada L.' }, changed: ['name'] })
  t.match(deleted, { resource_id: id, data: { id, name: 'Ada L.' }, changed: null })
  const [olaCreated, olaUpdated] = events.slice(-2)
  t.notOk('password' in olaCreated!.data, 'a user\'s password is never in an event')
  t.same(olaUpdated!.changed, ['password'], 'a new password is named')
  t.notOk('password' in olaUpdated!.data)
  t.ok(events.every(event => !Number.isNaN(Date.parse(event.occurred_at))))
})

t.test('event-list only; a caller sees the events of the resources it may list', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student })).statusCode, 201)
  t.equal((await app.inject({ method: 'POST', url: '/api/clients', headers: bearer(admin.token), payload: client })).statusCode, 201)

  const plain = await userWithRoles(app, ['User'])
  const refused = await app.inject({ url: '/api/events', headers: bearer(plain.token) })
  t.equal(refused.statusCode, 403)
  t.match(refused.json(), { success: false, code: 'permission_denied', message: /event-list/ })

  await roleWithPermissions(app, 'Feed', ['event-list'])
  await roleWithPermissions(app, 'Client feed', ['event-list', 'client-list'])
  const feedOnly = await userWithRoles(app, ['Feed'])
  const clientFeed = await userWithRoles(app, ['Client feed'])
  t.same((await readAll(app, feedOnly.token)).events.map(event => event.type), ['student.created'], 'students are public; clients and users are not')
  t.same((await readAll(app, clientFeed.token)).events.map(event => event.type), ['student.created', 'client.created'])
  t.same((await readAll(app, feedOnly.token, '/api/events?type[eq]=client.created')).events, [], 'a filter shows no more')
})

t.test('filters, the next link to poll from, and a cursor past EVENTS_RETENTION', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const ids: number[] = []
  for (const name of ['A', 'B', 'C']) {
    const res = await app.inject({ method: 'POST', url: '/students', payload: { ...student, name, email: `${name}@example.com` } })
    ids.push(res.json().id)
  }
  t.equal((await app.inject({ method: 'DELETE', url: `/students/${ids[1]}` })).statusCode, 204)

  const byType = await readAll(app, admin.token, '/api/events?type[in]=student.deleted,client.created&limit=1')
  t.same(byType.events.map(event => [event.type, event.resource_id]), [['student.deleted', ids[1]]])
  t.match(byType.next, /type\[in\]=student\.deleted%2Cclient\.created&limit=1&cursor=/, 'the next link keeps the filters')
  t.same((await readAll(app, admin.token, `/api/events?resource_id[eq]=${ids[1]}&resource[eq]=student`)).events.map(event => event.type), ['student.created', 'student.deleted'])
  t.same((await readAll(app, admin.token, '/api/events?occurred_at[gt]=2999-01-01T00:00:00Z')).events, [])
  const bad = await app.inject({ url: '/api/events?type[eq]=a%20b', headers: bearer(admin.token) })
  t.equal(bad.statusCode, 200, 'an unknown type matches nothing')
  t.equal((await app.inject({ url: '/api/events?sort=id', headers: bearer(admin.token) })).statusCode, 400, 'commit order only')

  // Polling from the last next link shows what came since, once.
  const all = await readAll(app, admin.token)
  const again = await page(app, admin.token, all.next)
  t.same(again.events, [], 'nothing new')
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: { ...student, name: 'D', email: 'd@example.com' } })).statusCode, 201)
  const polled = await readAll(app, admin.token, again.next)
  t.same(polled.events.map(event => event.data.name), ['D'])
  const filteredPoll = await readAll(app, admin.token, '/api/events?type[eq]=client.created')
  t.same(filteredPoll.events, [])
  t.ok(filteredPoll.next.includes('cursor='), 'a filter that matched nothing still says where to poll from')

  // The sweep takes the events older than EVENTS_RETENTION: a cursor before them is stale.
  const oldest = all.events[0]!.id
  await app.knex('change_outbox').where('id', '<=', all.events[1]!.id).update({ at: app.knex.raw('now() - interval \'31 days\'') })
  t.equal(await app.outboxSweep(), 2)
  const stale = await app.inject({ url: `/api/events?after=${oldest}`, headers: bearer(admin.token) })
  t.equal(stale.statusCode, 410)
  t.match(stale.json(), { success: false, statusCode: 410, code: 'cursor_expired', message: /swept/ })
  t.equal((await app.inject({ url: `/api/events?after=${all.events[1]!.id}`, headers: bearer(admin.token) })).statusCode, 200, 'a cursor at the last event swept has missed nothing')
})

t.test('a reader following next misses no event of a transaction that committed after a later one, on any instance', async t => {
  const app = await build(t)
  const other = await buildApp(t, app.config)
  const admin = await userWithRoles(app, ['Admin'])
  const { next } = await readAll(app, admin.token)

  // A change whose event is written first and committed last.
  const slow = await app.knex.transaction()
  const early = Number((await slow('change_outbox').insert({ resource: 'student', resource_id: 1, action: 'update', data: {} }).returning('id'))[0].id)
  const created = await other.inject({ method: 'POST', url: '/students', payload: student })
  t.equal(created.statusCode, 201, 'a later change, on the other instance, commits first')
  const reading = readAll(app, admin.token, next)
  setTimeout(() => { void slow.commit() }, 200)
  const { events } = await reading
  t.same(events.map(event => event.type), ['student.updated', 'student.created'], 'both: the event written first comes first')
  t.equal(events[0]!.id, early)
})
