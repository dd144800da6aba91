import net, { type AddressInfo } from 'node:net'
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { Webhook } from 'standardwebhooks'
import { build, buildApp, createDatabase, testConfig, within } from '../../helper.js'
import type { Config } from '../../../lib/process/config.js'
import { bearer, client, roleWithPermissions, userWithRoles } from './accounts.js'
import { startReceiver } from './webhook-receiver.js'

const student = (name: string) => ({ name, email: `${name.toLowerCase()}@example.com`, age: 20, dob: '2005-01-02' })

/** Receivers on this machine's loopback, and retries within the test's time. */
const local = (config: Config) => {
  config.webhooks = { ...config.webhooks, allowPrivate: true, firstRetryMs: 20 }
}

async function makeWebhook (app: FastifyInstance, token: string, body: object) {
  const res = await app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(token), payload: body })
  if (res.statusCode !== 201) throw new Error(`POST /api/webhooks: ${res.statusCode} ${res.body}`)
  return res.json() as { data: { id: number, enabled: boolean }, secret: string }
}

t.test('a webhook receives each event of its types, once, signed as Standard Webhooks says, as the events list shows it', async t => {
  const app = await build(t, local)
  const admin = await userWithRoles(app, ['Admin'])
  const receiver = await startReceiver(t)
  // Before the webhook: not delivered.
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Before') })).statusCode, 201)
  const made = await makeWebhook(app, admin.token, { url: receiver.url, types: ['student.created', 'student.updated', 'student.deleted'], description: 'the timetable' })
  t.match(made.secret, /^whsec_/)
  t.match(made.data, { url: receiver.url, enabled: true, description: 'the timetable', failing_since: null })

  const created = await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })
  const id = created.json().id
  t.equal((await app.inject({ method: 'PATCH', url: `/students/${id}`, payload: { age: 21 } })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/api/clients', headers: bearer(admin.token), payload: client })).statusCode, 201)
  t.equal((await app.inject({ method: 'DELETE', url: `/students/${id}` })).statusCode, 204)

  t.ok(await within(5_000, () => receiver.received.length >= 3), 'three deliveries arrived')
  const delivered = receiver.delivered(made.secret)
  t.same(delivered.map(event => event.type), ['student.created', 'student.updated', 'student.deleted'], 'each of its types, in order; not the client, nor the student made before')
  const listed = await app.inject({ url: '/api/events?resource[eq]=student', headers: bearer(admin.token) })
  t.equal(listed.statusCode, 200, listed.body)
  const events = listed.json().data
  t.same(delivered, events.slice(1), 'each as GET /api/events shows it')
  t.same(receiver.received.map(({ headers }) => headers['webhook-id']), events.slice(1).map((event: { id: number }) => String(event.id)), 'its webhook-id is the event\'s id')
  t.throws(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(receiver.received[0]!.body, receiver.received[0]!.headers as Record<string, string>), 'another secret does not verify it')

  const log = await app.inject({ url: `/api/webhooks/${made.data.id}/deliveries`, headers: bearer(admin.token) })
  t.equal(log.statusCode, 200)
  t.same(log.json().data.map((delivery: { event_id: number }) => delivery.event_id), events.slice(1).map((event: { id: number }) => event.id).reverse(), 'the log, the newest first')
  t.match(log.json().data[0], { state: 'delivered', next_attempt_at: null, attempts: [{ status: 200, error: null, response: 'thanks' }] })
})

t.test('a receiver that is down, then slow, then answers 500, then recovers gets every event, and the log tells each attempt', async t => {
  const app = await build(t, config => {
    local(config)
    config.webhooks.timeoutMs = 300
  })
  const admin = await userWithRoles(app, ['Admin'])
  const receiver = await startReceiver(t)
  const made = await makeWebhook(app, admin.token, { url: receiver.url, types: ['student.created'] })
  await receiver.down()
  for (const name of ['Ada', 'Bob', 'Cy']) t.equal((await app.inject({ method: 'POST', url: '/students', payload: student(name) })).statusCode, 201)
  const deliveries = async () => (await app.inject({ url: `/api/webhooks/${made.data.id}/deliveries`, headers: bearer(admin.token) })).json().data as Array<{ state: string, attempts: Array<{ status: number | null, error: string | null }> }>
  const attemptedTwice = async () => { const log = await deliveries(); return log.length === 3 && log.every(delivery => delivery.attempts.length >= 2) }
  t.ok(await within(5_000, attemptedTwice), 'each attempted twice while down')

  let answered = 0
  receiver.behaviour = () => ++answered <= 3 ? { status: 200, delayMs: 1_000 } : answered <= 6 ? { status: 500, body: 'x'.repeat(5_000) } : { status: 204 }
  await receiver.up()
  t.ok(await within(15_000, async () => (await deliveries()).every(delivery => delivery.state === 'delivered')), 'every delivery delivered in the end')

  const log = await deliveries()
  const errors = log.flatMap(delivery => delivery.attempts.map(attempt => attempt.error ?? String(attempt.status)))
  t.ok(errors.some(error => /ECONNREFUSED/.test(error)), `a refused attempt is logged: ${errors.join(' / ')}`)
  t.ok(errors.includes('no answer within 300 ms'), `a slow one: ${errors.join(' / ')}`)
  t.ok(errors.includes('answered 500'), 'a 500')
  const failed = log.flatMap(delivery => delivery.attempts).find(attempt => attempt.status === 500) as unknown as { response: string }
  t.equal(failed.response.length, 1_024, 'of an answer, the first KB is kept')
  const got = new Set(receiver.delivered(made.secret).map(event => event.resource_id))
  t.equal(got.size, 3, 'each event arrived')
  const webhook = (await app.inject({ url: `/api/webhooks/${made.data.id}`, headers: bearer(admin.token) })).json().data
  t.equal(webhook.failing_since, null, 'once delivered, the webhook is not failing')
})

t.test('a URL that is not public is refused at creation, and at each delivery, unless WEBHOOK_ALLOW_PRIVATE', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const refused = {
    'http://127.0.0.1:9/hooks': /127\.0\.0\.1, a loopback address/,
    'http://localhost:9/hooks': /a loopback address/,
    'http://[::1]:9/': /a loopback address/,
    'http://[::ffff:10.0.0.1]/': /a private address/,
    'http://10.1.2.3/': /a private address/,
    'http://192.168.0.1/': /a private address/,
    'http://169.254.169.254/latest/meta-data/': /a linkLocal address/,
    'http://0.0.0.0/': /an unspecified address/,
    'ftp://example.com/': /must be an http or https URL/,
    'https://user:secret@example.com/': /must hold no credentials/,
    'http://example.com:99999/': /must be an absolute URL/,
    'http://example.com:0/': /must not name port 0/,
    'http://[::127.0.0.1]/': /::7f00:1, an ipv4Compatible address/,
    'http://exa mple.com/': /must match format "uri"/
  }
  for (const [url, problem] of Object.entries(refused)) {
    const res = await app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(admin.token), payload: { url, types: ['student.created'] } })
    t.equal(res.statusCode, 400, url)
    t.match(res.json(), { code: 'invalid_body', data: { url: [problem] } }, url)
  }
  t.equal((await app.knex('webhooks').count('* as n').first())!.n, '0', 'none was made')
  const unresolved = await app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(admin.token), payload: { url: 'http://no-such-host.invalid/', types: ['student.created'] } })
  t.equal(unresolved.statusCode, 201, 'a host that does not resolve (yet) is taken: each delivery resolves it again')
  await app.inject({ method: 'DELETE', url: `/api/webhooks/${unresolved.json().data.id}`, headers: bearer(admin.token) })

  // A name that passed its check and resolves to a private address later (DNS rebinding), as
  // the database is changed here: the delivery is not sent, and its attempt says why.
  const receiver = await startReceiver(t)
  await app.knex('webhooks').insert({ url: `http://localhost:${receiver.port}/hooks`, types: ['student.created'], secret: `whsec_${Buffer.alloc(32).toString('base64')}`, after_position: 0 })
  app.webhookDispatcher.wake()
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  const attempts = () => app.knex('webhook_attempts').select('error', 'status')
  t.ok(await within(5_000, async () => (await attempts()).length > 0), 'attempted')
  t.match(await attempts(), [{ status: null, error: /localhost resolves to (127\.0\.0\.1|::1), a loopback address/ }])
  t.equal(receiver.received.length, 0, 'the receiver got nothing')

  // An address written in the URL is connected to without a lookup: it is checked itself.
  await app.knex('webhooks').update({ url: `http://127.0.0.1:${receiver.port}/hooks` })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Bob') })).statusCode, 201)
  t.ok(await within(5_000, async () => (await attempts()).length > 1), 'attempted')
  t.match((await attempts()).map(attempt => attempt.error), [/localhost/, /127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address/])
  t.equal(receiver.received.length, 0, 'the receiver got nothing still')
})

t.test('types: events of resources only, and of those the caller may list', async t => {
  const app = await build(t, local)
  const admin = await userWithRoles(app, ['Admin'])
  const receiver = await startReceiver(t)
  const wrongType = await app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(admin.token), payload: { url: receiver.url, types: ['session.created', 'student.created'] } })
  t.equal(wrongType.statusCode, 400)
  t.match(wrongType.json().data.types, [/names no event type: session\.created \(of /])
  t.equal((await app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(admin.token), payload: { url: receiver.url, types: ['student.moved'] } })).statusCode, 400, 'a type pattern it does not know')

  await roleWithPermissions(app, 'Blind hooks', ['webhook-create', 'webhook-list', 'webhook-edit'])
  const blind = await userWithRoles(app, ['Blind hooks'])
  const unread = await app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(blind.token), payload: { url: receiver.url, types: ['student.created'] } })
  t.equal(unread.statusCode, 403, 'a webhook is a way of reading events: it needs event-list')
  t.match(unread.json().message, /event-list/)
  await roleWithPermissions(app, 'Hooks', ['webhook-create', 'webhook-list', 'webhook-edit', 'event-list'])
  const hooks = await userWithRoles(app, ['Hooks'])
  const hidden = await app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(hooks.token), payload: { url: receiver.url, types: ['client.created'] } })
  t.equal(hidden.statusCode, 403, 'client.* needs client-list')
  t.match(hidden.json().message, /client\.created/)
  const made = await makeWebhook(app, hooks.token, { url: receiver.url, types: ['student.created'] })
  t.equal((await app.inject({ method: 'PATCH', url: `/api/webhooks/${made.data.id}`, headers: bearer(hooks.token), payload: { types: ['client.deleted'] } })).statusCode, 403, 'nor by a change')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/webhooks/${made.data.id}`, headers: bearer(hooks.token) })).statusCode, 403, 'delete needs webhook-delete')
  const admins = await makeWebhook(app, admin.token, { url: receiver.url, types: ['client.created'] })
  const redirected = await app.inject({ method: 'PATCH', url: `/api/webhooks/${admins.data.id}`, headers: bearer(hooks.token), payload: { url: 'http://127.0.0.1:9/elsewhere' } })
  t.equal(redirected.statusCode, 403, 'nor may a webhook of client.* be sent elsewhere by one who may not list clients')
  t.equal((await app.inject({ method: 'PATCH', url: `/api/webhooks/${admins.data.id}`, headers: bearer(hooks.token), payload: { description: 'renamed' } })).statusCode, 200, 'its description, though, is theirs to change')
  t.equal((await app.inject({ method: 'PATCH', url: `/api/webhooks/${admins.data.id}`, headers: bearer(blind.token), payload: { url: receiver.url } })).statusCode, 403, 'nor, without event-list, a webhook of students')

  const plain = await userWithRoles(app, [])
  for (const [method, url] of [['GET', '/api/webhooks'], ['GET', `/api/webhooks/${made.data.id}`], ['GET', `/api/webhooks/${made.data.id}/deliveries`], ['POST', `/api/webhooks/${made.data.id}/rotate-secret`]] as const) {
    t.equal((await app.inject({ method, url, headers: bearer(plain.token) })).statusCode, 403, `${method} ${url} needs a permission`)
  }
  t.equal((await app.inject({ url: '/api/webhooks' })).statusCode, 401)
})

t.test('list, show, change with If-Match, disable and enable, delete; each audited, the secret never shown again', async t => {
  const app = await build(t, local)
  const admin = await userWithRoles(app, ['Admin'])
  const auth = bearer(admin.token)
  const receiver = await startReceiver(t)
  const made = await makeWebhook(app, admin.token, { url: receiver.url, types: ['student.created'] })
  const url = `/api/webhooks/${made.data.id}`

  const listed = await app.inject({ url: '/api/webhooks', headers: auth })
  t.same(listed.json().data.map((webhook: { id: number }) => webhook.id), [made.data.id])
  t.notMatch(listed.body, /whsec_/, 'no secret in the list')
  const shown = await app.inject({ url, headers: auth })
  t.notMatch(shown.body, /whsec_/, 'nor in a show')
  const etag = shown.headers.etag as string
  t.equal((await app.inject({ url, headers: { ...auth, 'if-none-match': etag } })).statusCode, 304)

  const stale = await app.inject({ method: 'PATCH', url, headers: { ...auth, 'if-match': '"1"' }, payload: { description: 'x' } })
  t.equal(stale.statusCode, 412)
  const disabled = await app.inject({ method: 'PATCH', url, headers: { ...auth, 'if-match': etag }, payload: { enabled: false, description: 'paused' } })
  t.equal(disabled.statusCode, 200)
  t.match(disabled.json().data, { enabled: false, description: 'paused' })
  t.equal((await app.inject({ method: 'PATCH', url, headers: auth, payload: {} })).statusCode, 400, 'a change changes something')
  t.equal((await app.inject({ method: 'PATCH', url, headers: auth, payload: { url: 'http://10.0.0.1/' } })).statusCode, 200, 'WEBHOOK_ALLOW_PRIVATE: a private address is allowed')

  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  await new Promise(resolve => setTimeout(resolve, 500))
  t.equal(await app.knex('webhook_deliveries').count('* as n').first().then(row => Number(row!.n)), 0, 'a disabled webhook gets no deliveries')
  t.equal((await app.inject({ method: 'PATCH', url, headers: auth, payload: { enabled: true, url: receiver.url } })).statusCode, 200)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Bob') })).statusCode, 201)
  t.ok(await within(5_000, () => receiver.received.length === 1), 'enabled again, it gets the events from then on')
  t.match(receiver.delivered(made.secret), [{ data: { name: 'Bob' } }])

  const deleted = await app.inject({ method: 'DELETE', url, headers: auth })
  t.equal(deleted.statusCode, 200)
  t.equal((await app.inject({ url, headers: auth })).statusCode, 404)
  t.equal((await app.inject({ url: `${url}/deliveries`, headers: auth })).statusCode, 404)
  t.equal(await app.knex('webhook_deliveries').count('* as n').first().then(row => Number(row!.n)), 0, 'its deliveries went with it')
  const audit = await app.knex('audit_log').where({ resource: 'webhook' }).orderBy('id').select('action', 'after', 'before')
  t.same(audit.map(entry => entry.action), ['create', 'update', 'update', 'update', 'delete'])
  t.notMatch(JSON.stringify(audit), /whsec_/, 'no secret in the audit log')
  t.equal((await app.inject({ method: 'DELETE', url: '/api/webhooks/2147483648', headers: auth })).statusCode, 404, 'an id past the column\'s is not found')
  t.equal((await app.inject({ method: 'PATCH', url: `${url}`, headers: auth, payload: { url: receiver.url } })).statusCode, 404, 'nor is a deleted one changed')
})

t.test('a rotated secret: the old one signs beside the new one for a day', async t => {
  const app = await build(t, local)
  const admin = await userWithRoles(app, ['Admin'])
  const receiver = await startReceiver(t)
  const made = await makeWebhook(app, admin.token, { url: receiver.url, types: ['student.created'] })
  const rotated = await app.inject({ method: 'POST', url: `/api/webhooks/${made.data.id}/rotate-secret`, headers: bearer(admin.token) })
  t.equal(rotated.statusCode, 200)
  const { secret, data } = rotated.json()
  t.not(secret, made.secret)
  t.ok(Math.abs(Date.parse(data.previous_secret_until) - Date.now() - 86_400_000) < 60_000, 'for 24 hours')
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  t.ok(await within(5_000, () => receiver.received.length === 1))
  t.equal(receiver.delivered(made.secret).length, 1, 'the old secret verifies it')
  t.equal(receiver.delivered(secret).length, 1, 'the new one too')
  t.match(receiver.received[0]!.headers['webhook-signature'], /^v1,\S+ v1,\S+$/)

  await app.knex('webhooks').update({ previous_secret_until: app.knex.raw('now()') })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Bob') })).statusCode, 201)
  t.ok(await within(5_000, () => receiver.received.length === 2))
  t.match(receiver.received[1]!.headers['webhook-signature'], /^v1,\S+$/, 'a day later, the new one only')
  t.throws(() => new Webhook(made.secret).verify(receiver.received[1]!.body, receiver.received[1]!.headers as Record<string, string>))
  const audit = await app.knex('audit_log').where({ resource: 'webhook', action: 'update' }).first('after')
  t.notMatch(JSON.stringify(audit), /whsec_/, 'the audit entry names the secret changed, not its value')
})

t.test('a delivery failing past WEBHOOK_RETRY_FOR has failed; sent again by hand, it is delivered; an endpoint failing past WEBHOOK_DISABLE_AFTER is disabled', async t => {
  const app = await build(t, config => {
    local(config)
    config.webhooks.retryForMs = 300
    config.webhooks.disableAfterMs = 60_000
  })
  const admin = await userWithRoles(app, ['Admin'])
  const auth = bearer(admin.token)
  const receiver = await startReceiver(t, () => ({ status: 503 }))
  const made = await makeWebhook(app, admin.token, { url: receiver.url, types: ['student.created'] })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  const log = async () => (await app.inject({ url: `/api/webhooks/${made.data.id}/deliveries`, headers: auth })).json().data
  const webhook = async () => (await app.inject({ url: `/api/webhooks/${made.data.id}`, headers: auth })).json().data
  t.ok(await within(5_000, async () => (await log())[0]?.state === 'failed'), 'failed once its retry window passed')
  const [failed] = await log()
  t.ok(failed.attempts.length >= 2, 'after several attempts')
  t.equal(failed.next_attempt_at, null)

  receiver.behaviour = () => ({ status: 200 })
  const retried = await app.inject({ method: 'POST', url: `/api/webhooks/${made.data.id}/deliveries/${failed.id}/retry`, headers: auth })
  t.equal(retried.statusCode, 202)
  t.match(retried.json().data, { id: failed.id, state: 'pending' })
  t.ok(await within(5_000, async () => (await log())[0]?.state === 'delivered'), 'delivered')
  t.equal(receiver.delivered(made.secret).length, 1)
  t.equal((await app.inject({ method: 'POST', url: `/api/webhooks/${made.data.id}/deliveries/999999/retry`, headers: auth })).statusCode, 404)
  t.match(await app.knex('audit_log').where({ action: 'retry' }).first('resource', 'resource_id'), { resource: 'webhook_delivery', resource_id: String(failed.id) })

  receiver.behaviour = () => ({ status: 500 })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Bob') })).statusCode, 201)
  t.ok(await within(5_000, async () => (await webhook()).failing_since !== null), 'failing')
  t.equal((await webhook()).enabled, true, 'not yet for WEBHOOK_DISABLE_AFTER')
  // As if it had failed for a minute.
  await app.knex('webhooks').update({ failing_since: app.knex.raw('failing_since - interval \'1 minute\'') })
  t.ok(await within(5_000, async () => (await webhook()).enabled === false), 'disabled at its next failure')
  t.match(await webhook(), { enabled: false, disabled_reason: /^no delivery succeeded since \d{4}-/ })
  const audited = await app.inject({ url: '/api/audit?resource[in]=webhook,webhook_delivery', headers: auth })
  t.equal(audited.statusCode, 200, 'the audit log reads its entries')
  t.ok(audited.json().data.some((entry: { action: string }) => entry.action === 'disable') && audited.json().data.some((entry: { action: string }) => entry.action === 'retry'), 'retry and disable among them')
  const paused = await app.inject({ method: 'POST', url: `/api/webhooks/${made.data.id}/deliveries/${failed.id}/retry`, headers: auth })
  t.equal(paused.statusCode, 409, 'a delivery of a disabled webhook is not sent again')
  t.match(paused.json(), { code: 'conflict', message: /disabled/ })
  t.equal((await app.inject({ method: 'PATCH', url: `/api/webhooks/${made.data.id}`, headers: auth, payload: { enabled: true } })).statusCode, 200)
  receiver.behaviour = () => ({ status: 200, delayMs: 1_000 })
  t.equal((await app.inject({ method: 'POST', url: `/api/webhooks/${made.data.id}/deliveries/${failed.id}/retry`, headers: auth })).statusCode, 202)
  t.ok(await within(5_000, async () => (await app.knex('webhook_deliveries').where({ id: failed.id }).first('claimed_until')).claimed_until !== null), 'under way (its answer takes a second)')
  const twice = await app.inject({ method: 'POST', url: `/api/webhooks/${made.data.id}/deliveries/${failed.id}/retry`, headers: auth })
  t.equal(twice.statusCode, 409, 'nor while an attempt of it is under way')
  t.match(twice.json().message, /under way/)
  t.match(await app.knex('audit_log').where({ action: 'disable' }).first('resource', 'resource_id', 'actor_id'), { resource: 'webhook', resource_id: String(made.data.id), actor_id: null }, 'audited, by no one')
})

t.test('two instances send each event once, signed alike; a delivery cut short by a shutdown is sent by the other', async t => {
  const db = await createDatabase(t, { migrated: true })
  const config = testConfig(db, local)
  const one = await buildApp(t, config)
  const two = await buildApp(t, config)
  const admin = await userWithRoles(one, ['Admin'])
  let held = 0
  const receiver = await startReceiver(t, () => ++held === 1 ? { status: 200, delayMs: 60_000 } : { status: 200 })
  const made = await makeWebhook(one, admin.token, { url: receiver.url, types: ['student.created'] })
  two.webhookDispatcher.wake()
  const names = Array.from({ length: 40 }, (_, i) => `S${i}`)
  await Promise.all(names.map((name, i) => (i % 2 === 0 ? one : two).inject({ method: 'POST', url: '/students', payload: student(name) })))
  t.ok(await within(10_000, () => receiver.received.length === 39), 'all but the one held arrived')
  const pending = async () => Number((await one.knex('webhook_deliveries').where({ state: 'pending' }).count('* as n').first())!.n)
  t.ok(await within(5_000, async () => await pending() === 1), 'one is still pending, its answer held')
  // Whichever instance holds it, both close: the one cut short is given back, due at once.
  await one.close()
  const three = await buildApp(t, config)
  three.webhookDispatcher.wake()
  await two.close()
  t.ok(await within(10_000, () => receiver.received.length >= 40), 'the held one arrived again')
  const ids = receiver.delivered(made.secret).map(event => event.data.name)
  t.same(new Set(ids).size, 40, 'every event arrived')
})

t.test('odd endpoints and events: TLS to a plain port, an answer cut short, an event swept before its delivery, deliveries past EVENTS_RETENTION', async t => {
  const app = await build(t, local)
  const admin = await userWithRoles(app, ['Admin'])
  const auth = bearer(admin.token)
  // An answer whose body stops short: its status counts.
  const cut = net.createServer(socket => {
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\nabc'))
  })
  await new Promise<void>(resolve => cut.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => cut.close(() => resolve())))
  const port = (cut.address() as AddressInfo).port
  const tls = await makeWebhook(app, admin.token, { url: `https://127.0.0.1:${port}/`, types: ['student.created'] })
  const short = await makeWebhook(app, admin.token, { url: `http://127.0.0.1:${port}/`, types: ['student.created'] })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  const log = async (id: number) => (await app.inject({ url: `/api/webhooks/${id}/deliveries`, headers: auth })).json().data
  t.ok(await within(5_000, async () => (await log(short.data.id))[0]?.state === 'delivered'), 'the answer cut short counts: its status was 200')
  t.match((await log(short.data.id))[0].attempts, [{ status: 200, response: 'abc' }])
  await app.inject({ method: 'DELETE', url: `/api/webhooks/${short.data.id}`, headers: auth })
  const binary = await startReceiver(t, () => ({ status: 200, body: 'a\u0000b' }))
  const nul = await makeWebhook(app, admin.token, { url: binary.url, types: ['student.created'] })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Nul') })).statusCode, 201)
  t.ok(await within(5_000, async () => (await log(nul.data.id))[0]?.state === 'delivered'), 'an answer holding NUL is logged')
  t.match((await log(nul.data.id))[0].attempts, [{ status: 200, response: 'a\uFFFDb' }], 'with U+FFFD for it')
  await app.inject({ method: 'DELETE', url: `/api/webhooks/${nul.data.id}`, headers: auth })
  t.ok(await within(5_000, async () => (await log(tls.data.id))[0]?.attempts.length > 0))
  t.match((await log(tls.data.id))[0].attempts[0], { status: null, error: /./ }, 'TLS to a plain port fails, and says why')
  await app.inject({ method: 'DELETE', url: `/api/webhooks/${tls.data.id}`, headers: auth })

  // An event swept (EVENTS_RETENTION) before its delivery: the delivery has failed, and says why.
  const receiver = await startReceiver(t)
  await receiver.down()
  const made = await makeWebhook(app, admin.token, { url: receiver.url, types: ['student.created'] })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Bob') })).statusCode, 201)
  t.ok(await within(5_000, async () => (await log(made.data.id))[0]?.attempts.length > 0))
  await app.knex('change_outbox').delete()
  t.ok(await within(5_000, async () => (await log(made.data.id))[0]?.state === 'failed'))
  t.match((await log(made.data.id))[0].attempts.at(-1), { status: null, error: 'the event was swept (EVENTS_RETENTION) before it was delivered' })

  // Deliveries go with their events' retention, their attempts with them.
  t.equal(await app.webhookDispatcher.sweep(), 0, 'none is old enough')
  await app.knex('webhook_deliveries').update({ created_at: app.knex.raw('now() - interval \'31 days\'') })
  t.equal(await app.webhookDispatcher.sweep(), 1)
  t.same(await log(made.data.id), [])
  t.equal(Number((await app.knex('webhook_attempts').count('* as n').first())!.n), 0)
  t.equal((await app.inject({ url: '/api/webhooks/2147483648', headers: auth })).statusCode, 404, 'an id past the column\'s is not found')
})

t.test('a webhook changed to other types is not sent, nor sent again, the events of those it took before', async t => {
  const app = await build(t, local)
  const admin = await userWithRoles(app, ['Admin'])
  const failing = await startReceiver(t, () => ({ status: 503 }))
  const theirs = await makeWebhook(app, admin.token, { url: failing.url, types: ['client.created'] })
  t.equal((await app.inject({ method: 'POST', url: '/api/clients', headers: bearer(admin.token), payload: client })).statusCode, 201)
  const log = async () => (await app.inject({ url: `/api/webhooks/${theirs.data.id}/deliveries`, headers: bearer(admin.token) })).json().data
  t.ok(await within(5_000, async () => (await log())[0]?.attempts.length > 0), 'the client\'s event is pending, its endpoint failing')

  // One who may not list clients points it elsewhere, at students.
  await roleWithPermissions(app, 'Hooks', ['webhook-edit', 'webhook-list', 'event-list'])
  const hooks = await userWithRoles(app, ['Hooks'])
  const elsewhere = await startReceiver(t)
  const changed = await app.inject({ method: 'PATCH', url: `/api/webhooks/${theirs.data.id}`, headers: bearer(hooks.token), payload: { url: elsewhere.url, types: ['student.created'] } })
  t.equal(changed.statusCode, 200)
  t.ok(await within(5_000, async () => (await log())[0]?.state === 'failed'), 'the client\'s delivery has failed')
  t.match((await log())[0].attempts.at(-1), { status: null, error: 'the webhook no longer takes client.created' })
  const again = await app.inject({ method: 'POST', url: `/api/webhooks/${theirs.data.id}/deliveries/${(await log())[0].id}/retry`, headers: bearer(hooks.token) })
  t.equal(again.statusCode, 409)
  t.match(again.json().message, /no longer takes client\.created/)
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal(elsewhere.received.length, 0, 'no client reached the new URL')
  const webhook = (await app.inject({ url: `/api/webhooks/${theirs.data.id}`, headers: bearer(hooks.token) })).json().data
  t.equal(webhook.failing_since, null, 'at its new URL it is not failing, and a delivery given up unsent is no failure of it')
})

t.test('an endpoint that hangs does not hold up the others', async t => {
  const app = await build(t, config => {
    local(config)
    config.webhooks.timeoutMs = 3_000
  })
  const admin = await userWithRoles(app, ['Admin'])
  const hanging = await startReceiver(t, () => ({ status: 200, delayMs: 60_000 }))
  await makeWebhook(app, admin.token, { url: hanging.url, types: ['student.created'] })
  for (let i = 0; i < 20; i++) t.equal((await app.inject({ method: 'POST', url: '/students', payload: student(`Hung${i}`) })).statusCode, 201)
  t.ok(await within(5_000, () => hanging.received.length === 0 && app.knex('webhook_attempts').count('* as n').first().then(() => true)))
  const healthy = await startReceiver(t)
  const made = await makeWebhook(app, admin.token, { url: healthy.url, types: ['student.created'] })
  const sent = Date.now()
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Quick') })).statusCode, 201)
  t.ok(await within(2_000, () => healthy.received.length === 1), 'the healthy endpoint gets its event at once, however many wait for the other')
  t.ok(Date.now() - sent < 2_000)
  t.match(healthy.delivered(made.secret), [{ data: { name: 'Quick' } }])
})

t.test('a disabled webhook\'s pending deliveries wait, and its log shows them so', async t => {
  const app = await build(t, local)
  const admin = await userWithRoles(app, ['Admin'])
  const receiver = await startReceiver(t, () => ({ status: 503 }))
  const made = await makeWebhook(app, admin.token, { url: receiver.url, types: ['student.created'] })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  t.ok(await within(5_000, () => receiver.received.length > 0))
  t.equal((await app.inject({ method: 'PATCH', url: `/api/webhooks/${made.data.id}`, headers: bearer(admin.token), payload: { enabled: false } })).statusCode, 200)
  const waiting = async () => (await app.inject({ url: `/api/webhooks/${made.data.id}/deliveries`, headers: bearer(admin.token) })).json().data
  // An attempt under way as it was disabled ends first.
  t.ok(await within(5_000, async () => (await waiting())[0]?.next_attempt_at === null))
  t.match(await waiting(), [{ state: 'pending', next_attempt_at: null }], 'pending, for no time')
  const seen = receiver.received.length
  await new Promise(resolve => setTimeout(resolve, 500))
  t.equal(receiver.received.length, seen, 'not sent')
  receiver.behaviour = () => ({ status: 200 })
  t.equal((await app.inject({ method: 'PATCH', url: `/api/webhooks/${made.data.id}`, headers: bearer(admin.token), payload: { enabled: true } })).statusCode, 200)
  t.ok(await within(5_000, () => receiver.delivered(made.secret).length === 1), 'enabled again, it is sent')
})
