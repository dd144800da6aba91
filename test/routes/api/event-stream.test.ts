import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build, buildApp } from '../../helper.js'
import { bearer, client, PASSWORD, roleWithPermissions, userWithRoles } from './accounts.js'

/** A message of a stream: its `id` and `data`, or a comment. */
interface Message { id?: string, data?: string, comment?: string, retry?: string }

/**
 * A stream opened over HTTP on `app`, read as an EventSource would: `next()` waits for the next
 * message (or comment) up to `ms`; `close()` drops the connection.
 */
async function openStream (t: Test, app: FastifyInstance, path: string, headers: Record<string, string>) {
  const address = app.server.address()
  const base = typeof address === 'object' && address ? `http://127.0.0.1:${address.port}` : await app.listen({ port: 0, host: '127.0.0.1' })
  // A connection of its own (no agent), dropped by close(): the server sees the client go.
  const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
    http.get(`${base}${path}`, { headers, agent: false }, resolve).on('error', reject)
  })
  res.setEncoding('utf8')
  const chunks: string[] = []
  let ended = false
  let arrived: (() => void) | undefined
  res.on('data', (chunk: string) => { chunks.push(chunk); arrived?.() })
  res.on('close', () => { ended = true; arrived?.() })
  let buffered = ''
  const messages: Message[] = []
  async function fill (ms: number): Promise<void> {
    const deadline = Date.now() + ms
    while (messages.length === 0) {
      buffered += chunks.splice(0).join('')
      for (let end = buffered.indexOf('\n\n'); end >= 0; end = buffered.indexOf('\n\n')) {
        const block = buffered.slice(0, end)
        buffered = buffered.slice(end + 2)
        const message: Message = {}
        for (const line of block.split('\n')) {
          if (line.startsWith(':')) message.comment = line.slice(1).trim()
          else {
            const [field, ...rest] = line.split(':')
            message[field as 'id' | 'data' | 'retry'] = rest.join(':').trimStart()
          }
        }
        messages.push(message)
      }
      if (messages.length > 0 || ended || Date.now() >= deadline) return
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, deadline - Date.now())
        arrived = () => { clearTimeout(timer); resolve() }
      })
      arrived = undefined
    }
  }
  return {
    res,
    /** The next message, or undefined if none came within `ms` or the stream ended. */
    async next (ms = 3_000): Promise<Message | undefined> {
      await fill(ms)
      return messages.shift()
    },
    /** The next event's data, skipping comments. */
    async event (ms = 3_000): Promise<{ id: number, type: string, resource_id: number, data: Record<string, unknown> } | undefined> {
      for (;;) {
        const message = await this.next(ms)
        if (message === undefined) return undefined
        if (message.data !== undefined) {
          const event = JSON.parse(message.data)
          t.equal(message.id, String(event.id), 'the message\'s id is the event\'s')
          return event
        }
      }
    },
    get ended () { return ended },
    close: () => res.destroy()
  }
}

const student = (name: string) => ({ name, email: `${name.toLowerCase()}@example.com`, age: 20, dob: '2005-01-02' })

t.test('a stream sends the events after Last-Event-ID, then each as it commits on any instance, with heartbeats', async t => {
  const app = await build(t, config => { config.outbox.heartbeatSeconds = 1 })
  const other = await buildApp(t, app.config)
  const admin = await userWithRoles(app, ['Admin'])
  for (const name of ['Ada', 'Bob']) t.equal((await app.inject({ method: 'POST', url: '/students', payload: student(name) })).statusCode, 201)

  const stream = await openStream(t, app, '/api/events/stream', { ...bearer(admin.token), 'last-event-id': '0' })
  t.equal(stream.res.statusCode, 200)
  t.match(stream.res.headers['content-type'], /^text\/event-stream/)
  t.equal(stream.res.headers['cache-control'], 'no-store')
  t.same(await stream.next(), { retry: '2000' }, 'it names how long to wait before reconnecting')
  const first = await stream.event()
  const second = await stream.event()
  t.same([first?.type, first?.data.name, second?.data.name], ['student.created', 'Ada', 'Bob'], 'what was committed before, in order')

  const started = Date.now()
  t.equal((await other.inject({ method: 'POST', url: '/students', payload: student('Cy') })).statusCode, 201)
  const third = await stream.event()
  t.match(third, { type: 'student.created', data: { name: 'Cy' } }, 'a change on the other instance arrives')
  t.ok(Date.now() - started < 1_000, `within a second (${Date.now() - started} ms)`)
  t.equal((await app.inject({ method: 'PUT', url: `/api/v1/students/${third!.resource_id}`, payload: { name: 'Cyd' } })).statusCode, 200)
  t.match(await stream.event(), { type: 'student.updated', data: { name: 'Cyd' } })

  t.same(await stream.next(2_000), { comment: 'heartbeat' }, 'an idle stream sends a comment every EVENTS_HEARTBEAT')
  stream.close()
})

t.test('a stream resumed with Last-Event-ID misses nothing and repeats nothing; without one it starts from now', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Old') })).statusCode, 201)

  const live = await openStream(t, app, '/api/events/stream', bearer(admin.token))
  await live.next()
  const [{ id: old }] = await app.knex('change_outbox').max({ id: 'id' })
  t.same(await live.next(), { id: String(old) }, 'from now: first, where it stands, as an id without data (the client\'s Last-Event-ID)')
  for (const name of ['Ada', 'Bob']) t.equal((await app.inject({ method: 'POST', url: '/students', payload: student(name) })).statusCode, 201)
  const ada = await live.event()
  t.equal(ada?.data.name, 'Ada', 'from now: not the event before the stream began')
  live.close()

  // Bob's event may have been sent before the close; Cy's and Dee's come while no stream is open.
  for (const name of ['Cy', 'Dee']) t.equal((await app.inject({ method: 'POST', url: '/students', payload: student(name) })).statusCode, 201)
  const resumed = await openStream(t, app, '/api/events/stream', { ...bearer(admin.token), 'last-event-id': String(ada!.id) })
  await resumed.next()
  const names = []
  for (let event = await resumed.event(1_000); event !== undefined; event = await resumed.event(1_000)) names.push(event.data.name)
  t.same(names, ['Bob', 'Cy', 'Dee'], 'each event after the last received, once')
  resumed.close()
})

t.test('a stream holds the list\'s filters and permissions', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await roleWithPermissions(app, 'Feed', ['event-list'])
  const feedOnly = await userWithRoles(app, ['Feed'])
  const plain = await userWithRoles(app, ['User'])

  const refused = await app.inject({ url: '/api/events/stream', headers: bearer(plain.token) })
  t.equal(refused.statusCode, 403)
  t.match(refused.json(), { code: 'permission_denied' })
  t.equal((await app.inject({ url: '/api/events/stream' })).statusCode, 401)
  const badId = await app.inject({ url: '/api/events/stream', headers: { ...bearer(admin.token), 'last-event-id': 'abc' } })
  t.equal(badId.statusCode, 400)
  t.match(badId.json(), { code: 'invalid_parameter', param: 'last-event-id' })

  const students = await openStream(t, app, '/api/events/stream?after=0', bearer(feedOnly.token))
  const updates = await openStream(t, app, '/api/events/stream?after=0&type[eq]=student.updated', bearer(admin.token))
  t.equal((await app.inject({ method: 'POST', url: '/api/clients', headers: bearer(admin.token), payload: client })).statusCode, 201)
  const created = await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })
  t.equal((await app.inject({ method: 'PUT', url: `/api/v1/students/${created.json().id}`, payload: { name: 'Ada L.' } })).statusCode, 200)
  t.same([(await students.event())?.type, (await students.event())?.type], ['student.created', 'student.updated'], 'no client event without client-list')
  t.match(await updates.event(), { type: 'student.updated', data: { name: 'Ada L.' } }, 'filtered by type')
  t.equal(await updates.event(500), undefined, 'and nothing else')

  // From a list's cursor: where the pages ended, with their filters.
  const listed = await app.inject({ url: '/api/events?type[eq]=student.created', headers: bearer(admin.token) })
  const cursor = /cursor=([^&>]+)/.exec(listed.headers.link as string)![1]
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Bob') })).statusCode, 201)
  const fromCursor = await openStream(t, app, `/api/events/stream?type[eq]=student.created&cursor=${cursor}`, bearer(admin.token))
  t.match(await fromCursor.event(), { type: 'student.created', data: { name: 'Bob' } }, 'the events after the list\'s last page')
  fromCursor.close()
  students.close()
  updates.close()
})

t.test('a stream ends as the instance shuts down, and a Last-Event-ID past the retention is 410', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  for (const name of ['Ada', 'Bob']) t.equal((await app.inject({ method: 'POST', url: '/students', payload: student(name) })).statusCode, 201)
  const ids = (await app.knex('change_outbox').orderBy('id').pluck('id')).map(Number)
  await app.knex('change_outbox').where('id', ids[0]).update({ at: app.knex.raw('now() - interval \'31 days\'') })
  t.equal(await app.outboxSweep(), 1)
  const stale = await app.inject({ url: '/api/events/stream', headers: { ...bearer(admin.token), 'last-event-id': String(ids[0]! - 1) } })
  t.equal(stale.statusCode, 410)
  t.match(stale.json(), { code: 'cursor_expired' })

  const stream = await openStream(t, app, '/api/events/stream', { ...bearer(admin.token), 'last-event-id': String(ids[0]) })
  t.match(await stream.event(), { data: { name: 'Bob' } })

  app.shuttingDown = true
  t.equal(await stream.next(2_000), undefined)
  t.ok(stream.ended, 'the stream ends, for the client to resume on another instance')
  app.shuttingDown = false

  // Events after a stream's position swept while it waited: it ends, for the reconnect's 410.
  const behind = await openStream(t, app, '/api/events/stream?after=0&type[eq]=student.updated', bearer(admin.token))
  t.same(await behind.next(), { retry: '2000' })
  t.same(await behind.next(), { id: String(ids[1]) }, 'where it stands: no event matched')
  await app.knex('swept_positions').where({ source: 'change_outbox' }).update({ through: ids[1]! + 1_000 })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Cy') })).statusCode, 201)
  t.equal(await behind.next(2_000), undefined)
  t.ok(behind.ended, 'it ends')
})

t.test('a client too slow to read holds its stream back; one that leaves ends it; a key that never expires streams on', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const made = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(admin.token), payload: { name: 'feed', permissions: ['event-list'], current_password: PASSWORD } })
  t.equal(made.statusCode, 201)
  // More events than a stream reads at a time, and than a connection holds unread.
  await app.knex.raw(`insert into change_outbox (resource, resource_id, action, data)
    select 'student', n, 'create', jsonb_build_object('id', n, 'name', repeat('x', 10000)) from generate_series(1, 1500) n`)

  const slow = await openStream(t, app, '/api/events/stream?after=0', bearer(made.json().secret))
  slow.res.pause()
  await new Promise(resolve => setTimeout(resolve, 300))
  slow.res.resume()
  const ids: number[] = []
  while (ids.length < 1500) {
    const event = await slow.event()
    if (event === undefined) break
    ids.push(event.resource_id)
  }
  t.same(ids, Array.from({ length: 1500 }, (_, i) => i + 1), 'every event, in pages, once the client reads')

  const leaving = await openStream(t, app, '/api/events/stream?after=0', bearer(admin.token))
  leaving.res.pause()
  await new Promise(resolve => setTimeout(resolve, 300))
  leaving.close()
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal((await app.inject({ url: '/health/ready' })).statusCode, 200, 'the instance goes on')

  // A client that leaves before its stream begins (it waits on a transaction in flight).
  const holding = await app.knex.transaction()
  await holding.raw('select pg_current_xact_id()')
  const early = http.get(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/api/events/stream`, { headers: bearer(admin.token), agent: false })
  early.on('error', () => {})
  await new Promise(resolve => setTimeout(resolve, 300))
  early.destroy()
  await new Promise(resolve => setTimeout(resolve, 100))
  await holding.commit()
  await new Promise(resolve => setTimeout(resolve, 300))
  t.equal((await app.inject({ url: '/health/ready' })).statusCode, 200, 'nothing streams to it')
})

t.test('a stream survives a failed look at the feed; one whose read fails ends, for the client to resume', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const stream = await openStream(t, app, '/api/events/stream', bearer(admin.token))
  t.same(await stream.next(), { retry: '2000' })
  // Its first read done (it tells where it stands), the stream waits for the feed to move.
  t.match(await stream.next(), { id: /^\d+$/ })

  // The feed cannot be measured for a while (the sequence renamed): looks fail, and are retried.
  await app.knex.raw('alter sequence change_positions rename to change_positions_away')
  await new Promise(resolve => setTimeout(resolve, 600))
  await app.knex.raw('alter sequence change_positions_away rename to change_positions')
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  t.match(await stream.event(), { type: 'student.created', data: { name: 'Ada' } }, 'the stream goes on')

  // Its read fails (the table gone for a moment): it ends.
  await app.knex.raw('alter table change_outbox rename to change_outbox_away')
  t.teardown(() => app.knex.raw('alter table if exists change_outbox_away rename to change_outbox'))
  await app.knex.raw('select nextval(\'change_positions\')')
  t.equal(await stream.next(2_000), undefined)
  t.ok(stream.ended)
})

t.test('a filtered stream reads past many events that do not match, a bounded number at a time', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  await app.knex.raw(`insert into change_outbox (resource, resource_id, action, data)
    select 'probe', n, 'update', '{}' from generate_series(1, 12000) n`)
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  const stream = await openStream(t, app, '/api/events/stream?after=0&type[eq]=student.created', bearer(admin.token))
  t.match(await stream.event(), { type: 'student.created', data: { name: 'Ada' } }, 'the one event that matches, past 12,000 that do not')
  stream.close()
})

t.test('an idle stream waits: positions drawn past the last event (an audit entry\'s) do not keep it reading', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const fromNow = await openStream(t, app, '/api/events/stream', bearer(admin.token))
  await fromNow.next()
  t.same(await fromNow.next(), { id: '0' }, 'from now, on a feed with no event yet: where it stands is the beginning')
  fromNow.close()
  const stream = await openStream(t, app, '/api/events/stream?after=0', bearer(admin.token))
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  t.match(await stream.event(), { data: { name: 'Ada' } })
  // An audited change with no event: its entry's position lies past the last event.
  t.equal((await app.inject({ method: 'POST', url: '/api/login', payload: { email: admin.email, password: PASSWORD } })).statusCode, 200)
  await new Promise(resolve => setTimeout(resolve, 500))
  const commits = async () => Number((await app.knex.raw('select xact_commit from pg_stat_database where datname = current_database()')).rows[0].xact_commit)
  const before = await commits()
  await new Promise(resolve => setTimeout(resolve, 1_000))
  const during = await commits() - before
  t.ok(during < 100, `a second of an idle stream: ${during} transactions (a look every 250 ms), not a loop of reads`)
  stream.close()
})

t.test('a filtered stream crosses long runs of positions that hold no event, and tells only positions of events', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  // Positions drawn and never written: writes rolled back, or entries of the audit log only.
  const drawUnused = () => app.knex.raw('select nextval(\'change_positions\') from generate_series(1, 12000)')
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Ada') })).statusCode, 201)
  await drawUnused()
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: student('Bob') })).statusCode, 201)
  await drawUnused()
  const stream = await openStream(t, app, '/api/events/stream?after=0&type[eq]=student.created', bearer(admin.token))
  const told: string[] = []
  for (let message = await stream.next(); message !== undefined; message = await stream.next(1_000)) {
    if (message.id !== undefined) told.push(message.id)
  }
  stream.close()
  const events = (await app.knex('change_outbox').where({ resource: 'student' }).orderBy('id').pluck('id')).map(String)
  t.same(told, events, 'Ada\'s and Bob\'s events, and no position a crash could draw again for another event')
})

t.test('events swept between two pages of a stream held back are not skipped: the stream ends, and its reconnect is 410', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  // 1,500 events of 10 KB (three pages): a client that does not read holds the stream within the first.
  await app.knex.raw(`insert into change_outbox (resource, resource_id, action, data)
    select 'probe', n, 'update', jsonb_build_object('text', repeat('x', 10000)) from generate_series(1, 1500) n`)
  const ids = (await app.knex('change_outbox').orderBy('id').pluck('id')).map(Number)
  // Over a Unix socket: its buffers hold some 200 KB, where loopback TCP's grow to tens of MB
  // (tcp_rmem), enough to take all three pages before the client pauses, on some machines.
  const socketPath = path.join(os.tmpdir(), `event-stream-${process.pid}.sock`)
  await app.listen({ path: socketPath })
  const get = async (headers: Record<string, string>, query = '') => await new Promise<http.IncomingMessage>((resolve, reject) => {
    http.get({ socketPath, path: `/api/events/stream${query}`, headers, agent: false }, resolve).on('error', reject)
  })
  const res = await get(bearer(admin.token), '?after=0')
  res.pause()
  await new Promise(resolve => setTimeout(resolve, 500))
  // The retention sweep, meanwhile, of the second page's events.
  await app.knex('change_outbox').whereBetween('id', [ids[500]!, ids[999]!]).delete()
  await app.knex('swept_positions').where({ source: 'change_outbox' }).update({ through: ids[999]! })
  res.setEncoding('utf8')
  let text = ''
  res.on('data', (chunk: string) => { text += chunk })
  res.resume()
  const closed = new Promise(resolve => res.on('close', resolve))
  await Promise.race([closed, new Promise(resolve => setTimeout(resolve, 5_000))])
  res.destroy()
  const told = [...text.matchAll(/^id: (\d+)$/gm)].map(match => Number(match[1]))
  t.same(told, ids.slice(0, 500), 'the first page, then the end: none of the third page past the swept second')
  const reconnect = await get({ ...bearer(admin.token), 'last-event-id': String(told.at(-1)) })
  reconnect.destroy()
  t.equal(reconnect.statusCode, 410, 'the client learns it missed events')
})
