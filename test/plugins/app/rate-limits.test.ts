import t from 'tap'
import type { LightMyRequestResponse } from 'fastify'
import { build, buildApp, createDatabase, lockWaiters, testConfig, within } from '../../helper.js'
import { clockOf, limited, statuses } from './rate-clock.js'
import { student } from '../../routes/students/fixtures.js'
import { bearer, PASSWORD, userWithRoles } from '../../routes/api/accounts.js'

t.test('an anonymous caller spends its address\'s bucket: the fields on every answer, then 429 with Retry-After until a unit is back', async t => {
  const app = await build(t, limited({ count: 5, windowSeconds: 10 }))
  const clock = clockOf(app)
  const answers: LightMyRequestResponse[] = []
  for (let i = 0; i < 6; i++) answers.push(await app.inject({ url: '/students' }))
  t.same(statuses(answers), [200, 200, 200, 200, 200, 429])
  t.same(answers.map(res => res.headers['ratelimit-policy']), Array(6).fill('"default";q=5;w=10'), 'the policy on every answer, in the structured-field form')
  t.same(answers.map(res => res.headers.ratelimit), ['"default";r=4;t=2', '"default";r=3;t=2', '"default";r=2;t=2', '"default";r=1;t=2', '"default";r=0;t=2', '"default";r=0;t=2'],
    'what is left, and the seconds until a unit is back (one every 2 s)')
  const refused = answers[5]!
  t.equal(refused.headers['retry-after'], '2')
  t.match(refused.json(), { success: false, statusCode: 429, code: 'rate_limited', message: /rate limit of 5 units per 10s is spent; retry in 2 s/ })

  clock.tick(1)
  t.equal((await app.inject({ url: '/students' })).statusCode, 429, 'half a unit is not one')
  clock.tick(1)
  const back = await app.inject({ url: '/students' })
  t.equal(back.statusCode, 200, 'a unit back after 2 s')
  t.equal(back.headers.ratelimit, '"default";r=0;t=2')

  clock.tick(60)
  t.equal((await app.inject({ url: '/students' })).headers.ratelimit, '"default";r=4;t=2', 'full again (5), less this request; never above the count')
  t.equal((await app.inject({ url: '/students', remoteAddress: '10.0.0.2' })).headers.ratelimit, '"default";r=4;t=2', 'another address: a bucket of its own')

  const probes = await Promise.all(Array.from({ length: 10 }, async () => app.inject({ url: '/health/live' })))
  t.same(statuses(probes), Array(10).fill(200), 'the probes spend nothing')
  t.equal(probes[0]!.headers.ratelimit, undefined)
  const metric = await app.metrics.registry.getSingleMetric('requests_limited_total')!.get()
  t.same(metric.values.map(({ labels, value }) => [labels, value]), [[{ policy: 'default' }, 2]], 'refusals counted by policy')
})

t.test('a caller who keeps asking while refused is served as soon as a unit is back, not later', async t => {
  const app = await build(t, limited({ count: 10, windowSeconds: 1 }))
  const clock = clockOf(app)
  const answers: number[] = []
  for (let i = 0; i < 11; i++) answers.push((await app.inject({ url: '/students' })).statusCode)
  t.same(answers.slice(9), [200, 429])
  // A unit every 100 ms; asked every 20 ms meanwhile.
  const waits: number[] = []
  const refusals = new Set<unknown>()
  for (let ms = 20; ms <= 200; ms += 20) {
    clock.tick(0.02)
    const res = await app.inject({ url: '/students' })
    if (res.statusCode === 200) waits.push(ms)
    else refusals.add(/r=\d+/.exec(String(res.headers.ratelimit))?.[0])
  }
  t.same(waits, [100, 200], 'each unit spent the moment it is in')
  t.same([...refusals], ['r=0'], 'a refusal never tells a unit left')
})

t.test('a user\'s tokens and API keys spend one allowance, each user their own; a page above 100 rows and count=exact cost more', async t => {
  const app = await build(t, limited({ count: 20, windowSeconds: 60 }))
  clockOf(app)
  const alice = await userWithRoles(app, ['Admin'])
  const bob = await userWithRoles(app, ['Admin'])
  const key = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(alice.token), payload: { name: 'sync', permissions: ['client-list'], current_password: PASSWORD } })
  t.equal(key.statusCode, 201)
  t.equal(key.headers.ratelimit, '"default";r=19;t=3')
  const viaKey = await app.inject({ url: '/api/clients', headers: bearer(key.json<{ secret: string }>().secret) })
  t.equal(viaKey.headers.ratelimit, '"default";r=18;t=3', 'the key spends its owner\'s')
  t.equal((await app.inject({ url: '/api/clients', headers: bearer(bob.token) })).headers.ratelimit, '"default";r=19;t=3', 'another user: their own')

  t.equal((await app.inject({ url: '/api/clients?limit=1000', headers: bearer(alice.token) })).headers.ratelimit, '"default";r=8;t=3', 'a page of up to 1,000 rows: 10')
  t.equal((await app.inject({ url: '/api/clients?limit=101&count=exact', headers: bearer(alice.token) })).headers.ratelimit, '"default";r=2;t=3', '101 rows (2) and an exact count (4)')
  const over = await app.inject({ url: '/api/clients?limit=300', headers: bearer(alice.token) })
  t.match(over, { statusCode: 429, headers: { 'retry-after': '3' } }, 'a cost of 3 with 2 left waits for 1 unit, 3 s')
  t.equal((await app.inject({ url: '/api/clients', headers: bearer(alice.token) })).statusCode, 200, 'a cost of 1 still passes')
  for (const limit of ['1e3', '1001', '+200', '0x3E8']) {
    const refused = await app.inject({ url: `/api/clients?limit=${limit}`, headers: bearer(bob.token) })
    t.equal(refused.statusCode, 400, `limit=${limit}`)
  }
  t.equal((await app.inject({ url: '/api/clients', headers: bearer(bob.token) })).headers.ratelimit, '"default";r=14;t=3', 'a page size refused, 400, costs 1')
  t.equal((await app.inject({ url: '/api/clients?limit=0300', headers: bearer(bob.token) })).headers.ratelimit, '"default";r=11;t=3', 'leading zeros: the page the list serves, 300 rows, 3')
})

t.test('a request refused before it spent (a token refused, 401; a permission lacking, 403) spends a unit of its caller\'s', async t => {
  const app = await build(t, limited({ count: 3, windowSeconds: 3600 }))
  clockOf(app)
  const answers = []
  for (let i = 0; i < 4; i++) answers.push(await app.inject({ url: '/api/roles', headers: { authorization: 'Bearer sk_nope' } }))
  t.same(statuses(answers), [401, 401, 401, 429], 'the address\'s units')
  t.same(answers.map(res => res.headers.ratelimit), ['"default";r=2;t=1200', '"default";r=1;t=1200', '"default";r=0;t=1200', '"default";r=0;t=1200'])
  t.match(answers[3]!.json(), { statusCode: 429, code: 'rate_limited' })
  t.equal(answers[3]!.headers['retry-after'], '1200')

  const user = await buildApp(t, testConfig((await createDatabase(t, { migrated: true })), limited({ count: 2, windowSeconds: 3600 })))
  clockOf(user)
  const someone = await userWithRoles(user, [])
  const lacking = []
  for (let i = 0; i < 3; i++) lacking.push(await user.inject({ url: '/api/roles', headers: bearer(someone.token) }))
  t.same(statuses(lacking), [403, 403, 429], 'the user\'s units')
})

t.test('a batch costs a unit for each 10 rows before it is written; an import\'s and an export\'s rows are charged once answered', async t => {
  const app = await build(t, limited({ count: 10_000, windowSeconds: 3600 }))
  clockOf(app)
  const tokens = async () => (await app.knex('rate_buckets').where({ key: 'ip:127.0.0.1' }).first('tokens'))!.tokens as number
  const batch = await app.inject({ method: 'POST', url: '/students/batch', payload: Array.from({ length: 95 }, (_, i) => student(i)) })
  t.equal(batch.statusCode, 200)
  t.equal(batch.headers.ratelimit, '"default";r=9990;t=1', '95 rows: 10 units')

  const file = Array.from({ length: 2_500 }, (_, i) => JSON.stringify(student(1_000 + i))).join('\n')
  const imported = await app.inject({ method: 'POST', url: '/students/import', headers: { 'content-type': 'application/x-ndjson' }, payload: file })
  t.match(imported.json(), { inserted: 2_500 })
  t.ok(await within(5_000, async () => await tokens() === 9_990 - 1 - 24), '2,500 rows read: 25 units, 24 charged once answered')

  const exported = await app.inject({ url: '/students', headers: { accept: 'text/csv' } })
  t.equal(exported.body.trim().split('\n').length, 2_596, 'a header line and 2,595 rows')
  t.ok(await within(5_000, async () => await tokens() === 9_965 - 1 - 2), '2,595 rows written: 3 units, 2 charged once answered')

  const small = await buildApp(t, testConfig({ ...app.config.db!, database: (await app.knex.raw('select current_database() as name')).rows[0].name }, limited({ count: 2, windowSeconds: 3600 })))
  clockOf(small)
  t.equal((await small.inject({ url: '/students', headers: { accept: 'text/csv' }, remoteAddress: '10.0.0.8' })).statusCode, 200)
  t.ok(await within(5_000, async () => (await small.knex('rate_buckets').where({ key: 'ip:10.0.0.8' }).first('tokens'))?.tokens === 0),
    'with a count of 2, the export and its 2 units of rows cost 2 at most')
  t.equal((await small.inject({ url: '/students?count=exact', headers: { accept: 'text/csv' }, remoteAddress: '10.0.0.9' })).statusCode, 200)
  await new Promise(resolve => setTimeout(resolve, 200))
  t.equal((await small.knex('rate_buckets').where({ key: 'ip:10.0.0.9' }).first('tokens'))!.tokens, 0, 'an export whose own cost is the count: its rows charge nothing more')
  await app.rateLimits.leases.charge('ip:10.0.0.7', app.rateLimits.policy, 5)
  t.equal((await app.knex('rate_buckets').where({ key: 'ip:10.0.0.7' }).first('tokens'))!.tokens, 9_995, 'a charge to a caller this instance holds no units for')
})

t.test('a batch that costs more than is left is refused before a row is written; one above the policy\'s count costs the count', async t => {
  const app = await build(t, limited({ count: 20, windowSeconds: 3600 }))
  clockOf(app)
  const rows = (from: number) => Array.from({ length: 300 }, (_, i) => student(from + i))
  const full = await app.inject({ method: 'POST', url: '/students/batch', payload: rows(0) })
  t.match(full, { statusCode: 200, headers: { ratelimit: '"default";r=0;t=180' } }, '30 units asked, 20 at most: a full bucket serves it')

  const other = { remoteAddress: '10.0.0.3' }
  t.equal((await app.inject({ url: '/students?limit=1', ...other })).statusCode, 200, 'a unit spent: 19 left')
  const refused = await app.inject({ method: 'POST', url: '/students/batch', payload: rows(1_000), ...other })
  t.match(refused, { statusCode: 429, headers: { 'retry-after': '180', ratelimit: '"default";r=18;t=180' } }, '20 asked (1, and 19 for the rows), 18 left after its own')
  t.equal((await app.knex('students').count({ n: '*' }))[0]!.n, '300', 'nothing written')
})

t.test('a batch whose request spent the policy\'s whole count already costs nothing more for its rows', async t => {
  const app = await build(t, limited({ count: 1, windowSeconds: 3600 }))
  clockOf(app)
  const batch = await app.inject({ method: 'POST', url: '/students/batch', payload: Array.from({ length: 30 }, (_, i) => student(i)) })
  t.match(batch, { statusCode: 200, headers: { ratelimit: '"default";r=0;t=3600' } }, 'its one unit, the count, before the rows')
  t.equal((await app.knex('students').count({ n: '*' }))[0]!.n, '30')
})

t.test('a batch with an Idempotency-Key costs its rows before its key is looked up, a replay too', async t => {
  const app = await build(t, limited({ count: 100, windowSeconds: 3600 }))
  clockOf(app)
  const batch = { method: 'POST' as const, url: '/students/batch', headers: { 'idempotency-key': 'once' }, payload: Array.from({ length: 95 }, (_, i) => student(i)) }
  t.equal((await app.inject(batch)).headers.ratelimit, '"default";r=90;t=36')
  const again = await app.inject(batch)
  t.match(again, { statusCode: 200, headers: { 'idempotent-replayed': 'true', ratelimit: '"default";r=80;t=36' } }, 'the replay: 10 units')
  const small = await app.inject({ method: 'POST', url: '/students/batch', payload: [student(500), student(501)] })
  t.match(small, { statusCode: 200, headers: { ratelimit: '"default";r=79;t=36' } }, 'a batch of up to 10 rows: a unit')
})

t.test('an import whose file breaks off is charged the rows it read', async t => {
  const app = await build(t, limited({ count: 10_000, windowSeconds: 3600 }))
  clockOf(app)
  const file = ['name,email,age,dob', ...Array.from({ length: 250 }, (_, i) => `Student ${i},student${i}@example.com,20,2000-01-31`), '"unterminated,x@example.com,20,2000-01-31'].join('\n')
  const res = await app.inject({ method: 'POST', url: '/students/import', headers: { 'content-type': 'text/csv' }, payload: file })
  t.match(res.json(), { statusCode: 400 }, 'a quote never closed')
  t.ok(await within(5_000, async () => (await app.knex('rate_buckets').first('tokens'))!.tokens === 10_000 - 1 - 2), '250 rows read: 2 units charged')
})

t.test('a daily quota: refused until the UTC day ends, kept by PostgreSQL across a restart', async t => {
  const db = await createDatabase(t, { migrated: true })
  const first = await buildApp(t, testConfig(db, limited(null, 3)))
  const clock = clockOf(first)
  clock.ms = Date.UTC(2026, 10, 28, 23, 59, 0)
  const answers = []
  for (let i = 0; i < 4; i++) answers.push(await first.inject({ url: '/students' }))
  t.same(statuses(answers), [200, 200, 200, 429])
  t.same(answers.map(res => res.headers['ratelimit-policy']), Array(4).fill('"default-daily";q=3;w=86400'))
  t.same(answers.map(res => res.headers.ratelimit), ['"default-daily";r=2;t=60', '"default-daily";r=1;t=60', '"default-daily";r=0;t=60', '"default-daily";r=0;t=60'])
  t.equal(answers[3]!.headers['retry-after'], '60', 'until midnight UTC')
  t.match(answers[3]!.json(), { code: 'rate_limited', message: /daily quota of 3 units is spent; it is renewed at midnight UTC, in 60 s/ })
  t.equal((await first.knex.raw("select relpersistence from pg_class where relname = 'rate_quotas'")).rows[0].relpersistence, 'p', 'a logged table: it survives a crash of PostgreSQL')
  await first.close()

  const restarted = await buildApp(t, testConfig(db, limited(null, 3)))
  clockOf(restarted).ms = clock.ms + 30_000
  const after = await restarted.inject({ url: '/students' })
  t.match(after, { statusCode: 429, headers: { 'retry-after': '30' } }, 'a new instance finds the day spent')
  clockOf(restarted).ms = Date.UTC(2026, 10, 29, 0, 0, 1)
  t.equal((await restarted.inject({ url: '/students' })).headers.ratelimit, '"default-daily";r=2;t=86399', 'a new day')
})

t.test('units an instance took ahead and did not spend go back: a second later, and all as it closes', async t => {
  const db = await createDatabase(t, { migrated: true })
  const app = await buildApp(t, testConfig(db, limited(null, 100)))
  const clock = clockOf(app)
  const used = async () => (await app.knex('rate_quotas').first('used'))!.used
  // The second request takes two units: one for it, one ahead.
  for (let i = 0; i < 2; i++) await app.inject({ url: '/students' })
  t.equal(await used(), '3', 'three units taken for two requests')
  await app.rateLimits.leases.giveBack()
  t.equal(await used(), '3', 'a lease under a second old is kept')
  clock.tick(1)
  await app.rateLimits.leases.giveBack()
  t.equal(await used(), '2', 'a second old, its unit is given back')

  const closing = await buildApp(t, testConfig(db, limited(null, 100)))
  clockOf(closing).ms = clock.ms
  for (let i = 0; i < 2; i++) await closing.inject({ url: '/students', remoteAddress: '10.0.0.5' })
  await closing.close()
  t.equal((await app.knex('rate_quotas').where({ key: 'ip:10.0.0.5' }).first('used'))!.used, '2', 'a closing instance gives back what it holds')
})

t.test('units taken before midnight are not given back to the next day\'s quota', async t => {
  const db = await createDatabase(t, { migrated: true })
  const [late, early] = [await buildApp(t, testConfig(db, limited(null, 100))), await buildApp(t, testConfig(db, limited(null, 100)))]
  const clock = clockOf(late, early)
  clock.ms = Date.UTC(2026, 10, 28, 23, 59, 59, 500)
  for (let i = 0; i < 2; i++) await late.inject({ url: '/students' })
  clock.ms = Date.UTC(2026, 10, 29, 0, 0, 0, 200)
  await early.inject({ url: '/students' })
  clock.ms = Date.UTC(2026, 10, 29, 0, 0, 0, 500)
  await late.inject({ url: '/students' })
  t.same(await late.knex('rate_quotas').orderBy('day').pluck('used'), ['3', '3'],
    'the first day kept its 3 (2 spent, 1 taken ahead); the second counts the other\'s request and 2 taken now, less nothing')
})

t.test('a quota refused on one instance is served again there once another gives units back, within seconds', async t => {
  const db = await createDatabase(t, { migrated: true })
  const [holder, refuser] = [await buildApp(t, testConfig(db, limited(null, 16))), await buildApp(t, testConfig(db, limited(null, 16)))]
  const clock = clockOf(holder, refuser)
  for (let i = 0; i < 2; i++) await holder.inject({ url: '/students' })
  await refuser.rateLimits.leases.charge('ip:127.0.0.1', refuser.rateLimits.policy, 13)
  t.equal((await refuser.inject({ url: '/students' })).statusCode, 429, 'the day\'s 16 taken: 2 requests, 1 unit held ahead by the other instance, 13 charged')
  clock.tick(2)
  await holder.rateLimits.leases.giveBack()
  await refuser.rateLimits.leases.giveBack()
  t.equal((await refuser.inject({ url: '/students' })).statusCode, 429, 'the refusal still holds')
  clock.tick(4)
  await refuser.rateLimits.leases.giveBack()
  t.equal((await refuser.inject({ url: '/students' })).statusCode, 200, 'the unit given back, not kept from the caller until midnight')
})

t.test('a unit refilled to a millionth is a unit (100/9s: one every 90 ms)', async t => {
  const app = await build(t, limited({ count: 100, windowSeconds: 9 }))
  const clock = clockOf(app)
  await app.rateLimits.leases.charge('ip:127.0.0.1', app.rateLimits.policy, 100)
  clock.ms += 90
  t.equal((await app.inject({ url: '/students' })).statusCode, 200, '90 ms refill 0.9999999999999999 of a unit in floating point')
})

t.test('two instances on one database hold one bucket: a caller gets the policy\'s count and no more, in turns or all at once', async t => {
  const db = await createDatabase(t, { migrated: true })
  const apps = [await buildApp(t, testConfig(db, limited({ count: 50, windowSeconds: 3600 }))), await buildApp(t, testConfig(db, limited({ count: 50, windowSeconds: 3600 })))]
  const clock = clockOf(...apps)
  const inTurns: number[] = []
  for (let i = 0; i < 80; i++) inTurns.push((await apps[i % 2]!.inject({ url: '/students' })).statusCode)
  t.equal(inTurns.filter(status => status === 200).length, 50, 'in turns: 50 of 80')

  clock.tick(3600)
  const atOnce = await Promise.all(Array.from({ length: 200 }, async (_, i) => apps[i % 2]!.inject({ url: '/students', remoteAddress: '10.0.0.9' })))
  t.equal(statuses(atOnce).filter(status => status === 200).length, 50, 'all at once, 100 to each: 50 of 200')
  t.ok(statuses(atOnce).every(status => status === 200 || status === 429))
})

t.test('GET /api/usage: the caller\'s policy and what is left; another user\'s with user-list', async t => {
  const app = await build(t, limited({ count: 10, windowSeconds: 60 }, 1000))
  clockOf(app)
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, ['User'])
  for (let i = 0; i < 3; i++) await app.inject({ url: '/api/clients', headers: bearer(user.token) })
  const own = await app.inject({ url: '/api/usage', headers: bearer(user.token) })
  t.equal(own.statusCode, 200)
  t.same(own.json(), {
    success: true,
    data: {
      policy: { rate: { name: 'default', count: 10, window_seconds: 60 }, quota: { name: 'default-daily', count: 1000 } },
      rate: { remaining: 6, reset_seconds: 6 },
      quota: { used: 4, remaining: 996, resets_at: '2026-11-29T00:00:00.000Z' }
    }
  }, 'three requests and this one spent')
  t.equal(own.headers.ratelimit, '"default";r=6;t=6, "default-daily";r=996;t=43200', 'the fields agree')

  const other = await app.inject({ url: `/api/usage?user_id=${user.id}`, headers: bearer(admin.token) })
  t.match(other.json(), { data: { rate: { remaining: 6 }, quota: { used: 4 } } }, 'the user\'s, not the admin\'s: this read is the admin\'s to pay')
  const fresh = await userWithRoles(app, [])
  t.same((await app.inject({ url: `/api/usage?user_id=${fresh.id}`, headers: bearer(admin.token) })).json<{ data: object }>().data,
    { policy: { rate: { name: 'default', count: 10, window_seconds: 60 }, quota: { name: 'default-daily', count: 1000 } }, rate: { remaining: 10, reset_seconds: null }, quota: { used: 0, remaining: 1000, resets_at: '2026-11-29T00:00:00.000Z' } },
    'a user who spent nothing: a full bucket')
  t.match((await app.inject({ url: `/api/usage?user_id=${admin.id}`, headers: bearer(user.token) })).json(), { statusCode: 403, code: 'permission_denied' })
  t.match((await app.inject({ url: '/api/usage?user_id=999999', headers: bearer(admin.token) })).json(), { statusCode: 404, code: 'not_found' })
  t.match((await app.inject({ url: '/api/usage?user_id=x', headers: bearer(admin.token) })).json(), { statusCode: 400, code: 'invalid_parameter', param: 'user_id' })
  t.match((await app.inject({ url: '/api/usage?user_id=2147483648', headers: bearer(admin.token) })).json(), { statusCode: 400, code: 'invalid_parameter', param: 'user_id' })
})

t.test('with RATE_LIMIT and RATE_QUOTA off (the default), no fields and no limit', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, ['User'])
  const answers = await Promise.all(Array.from({ length: 30 }, async () => app.inject({ url: '/students' })))
  t.same(statuses(answers), Array(30).fill(200))
  t.equal(answers[0]!.headers.ratelimit, undefined)
  t.equal(answers[0]!.headers['ratelimit-policy'], undefined)
  t.same((await app.inject({ url: '/api/usage', headers: bearer(user.token) })).json<{ data: unknown }>().data, { policy: { rate: null, quota: null }, rate: null, quota: null })
})

t.test('a bucket PostgreSQL does not answer for in time: 503, and the next request takes again', async t => {
  const app = await build(t, config => {
    config.rateLimits = { rate: { count: 10, windowSeconds: 60 }, quota: null }
    config.timeouts.dbStatement = 300
  })
  clockOf(app)
  t.equal((await app.inject({ url: '/students' })).statusCode, 200)
  const holder = await app.knex.transaction()
  await holder.raw("select * from rate_buckets where key = 'ip:127.0.0.1' for update")
  const held = await app.inject({ url: '/students' })
  t.match(held, { statusCode: 503, headers: { 'retry-after': /^\d+$/ } })
  t.match(held.json(), { code: 'unavailable' })
  const refused = await app.inject({ url: '/api/roles', headers: { authorization: 'Bearer sk_nope' } })
  t.match(refused.json(), { statusCode: 401 }, 'a refusal whose unit cannot be counted is answered as it is')
  await holder.rollback()
  const next = await app.inject({ url: '/students' })
  t.equal(next.headers.ratelimit, '"default";r=8;t=6', 'the failed takes spent nothing')
})

t.test('a charge made while the instance takes for the same caller waits for the take, and counts once', async t => {
  const app = await build(t, limited({ count: 10, windowSeconds: 3600 }))
  const clock = clockOf(app)
  t.equal((await app.inject({ url: '/students' })).statusCode, 200)
  clock.tick(3600)
  const holder = await app.knex.transaction()
  await holder.raw("select * from rate_buckets where key = 'ip:127.0.0.1' for update")
  const asking = app.inject({ url: '/students' })
  t.ok(await lockWaiters(app, 1), 'the take waits on the bucket')
  const charging = app.rateLimits.leases.charge('ip:127.0.0.1', app.rateLimits.policy, 3)
  await holder.rollback()
  t.equal((await asking).statusCode, 200)
  await charging
  t.equal((await app.knex('rate_buckets').first('tokens'))!.tokens, 10 - 1 - 3, 'full again, less the request and the charge')
})

t.test('behind TRUST_PROXY, a forwarded address is limited by its key: spellings of one IPv6 /64 share a bucket, a value that is no address too', async t => {
  const app = await build(t, { ...limited({ count: 2, windowSeconds: 3600 }), trustProxy: ['127.0.0.1'] })
  clockOf(app)
  const from = async (forwarded: string) => (await app.inject({ url: '/students', headers: { 'x-forwarded-for': forwarded } })).statusCode
  t.same([await from('2001:db8::1'), await from('2001:DB8:0::2'), await from('2001:db8::3')], [200, 200, 429], 'one /64')
  t.same([await from('x'.repeat(7_000)), await from('hello world'), await from('not an address')], [200, 200, 429], 'no 500 for a long value; no bucket per string')
  t.equal(await from('10.0.0.1'), 200)
})

t.test('a 503 costs nothing and carries no fields', async t => {
  const app = await build(t, config => {
    config.rateLimits = { rate: { count: 10, windowSeconds: 3600 }, quota: null }
    config.timeouts.dbStatement = 300
  })
  clockOf(app)
  const made = await app.inject({ method: 'POST', url: '/students', payload: student(1) })
  t.equal(made.headers.ratelimit, '"default";r=9;t=360')
  const holder = await app.knex.transaction()
  await holder('students').where({ id: made.json<{ id: number }>().id }).forUpdate().select('id')
  const busy = await app.inject({ method: 'PATCH', url: `/students/${made.json<{ id: number }>().id}`, payload: { age: 30 } })
  await holder.rollback()
  t.equal(busy.statusCode, 503)
  t.same([busy.headers.ratelimit, busy.headers['ratelimit-policy']], [undefined, undefined])
  const next = await app.inject({ url: '/students' })
  t.equal(next.headers.ratelimit, '"default";r=8;t=360', 'its unit given back: the next request spends the second')
})

t.test('an address refused gets 429 before an unknown API key is looked up', async t => {
  const app = await build(t, config => {
    config.rateLimits = { rate: { count: 2, windowSeconds: 3600 }, quota: null }
    config.timeouts.dbStatement = 300
  })
  clockOf(app)
  const made = async () => (await app.inject({ url: '/api/clients', headers: { authorization: `Bearer sk_${'x'.repeat(43)}` } })).statusCode
  t.same([await made(), await made(), await made()], [401, 401, 429])
  // The keys' table locked: a look-up would wait past DB_STATEMENT_TIMEOUT, 503.
  const holder = await app.knex.transaction()
  await holder.raw('lock table api_keys in access exclusive mode')
  const refused = await app.inject({ url: '/api/clients', headers: { authorization: `Bearer sk_${'y'.repeat(43)}` } })
  await holder.rollback()
  t.match(refused, { statusCode: 429, headers: { 'retry-after': '1800', ratelimit: '"default";r=0;t=1800' } })
})

t.test('the sweep deletes buckets full again and quotas of days gone, and keeps the rest', async t => {
  const app = await build(t, limited({ count: 10, windowSeconds: 60 }, 100))
  const clock = clockOf(app)
  clock.ms = Date.now() - 3 * 86_400_000
  await app.inject({ url: '/students', remoteAddress: '10.0.0.1' })
  clock.ms = Date.now()
  await app.inject({ url: '/students', remoteAddress: '10.0.0.2' })
  await app.rateLimits.sweep()
  t.same(await app.knex('rate_buckets').pluck('key'), ['ip:10.0.0.2'])
  t.same(await app.knex('rate_quotas').pluck('key'), ['ip:10.0.0.2'])
})
