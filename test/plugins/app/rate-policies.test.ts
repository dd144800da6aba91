import t from 'tap'
import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import { buildApp, build, createDatabase, testConfig, within } from '../../helper.js'
import { clockOf, limited, statuses } from './rate-clock.js'
import { bearer, PASSWORD, roleWithPermissions, userWithRoles, userWithRoles as logIn } from '../../routes/api/accounts.js'
import { namedPolicy } from '../../../lib/limits/rate-policy.js'

/** `n` requests of `token`'s, one after another. */
async function requests (app: FastifyInstance, token: string, n: number, url = '/api/clients'): Promise<LightMyRequestResponse[]> {
  const answers: LightMyRequestResponse[] = []
  for (let i = 0; i < n; i++) answers.push(await app.inject({ url, headers: bearer(token) }))
  return answers
}

/** An API key of `token`'s user, with this body beside its name, permissions and password. */
async function makeKey (app: FastifyInstance, token: string, body: object = {}) {
  const res = await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload: { name: 'sync', permissions: ['client-list'], current_password: PASSWORD, ...body } })
  return { res, id: res.json<{ data?: { id: number } }>().data?.id, secret: res.json<{ secret?: string }>().secret ?? '' }
}

t.test('a role\'s policy: its holders have the most generous of their roles\', named after the role; a role of none has the default', async t => {
  const app = await build(t, limited({ count: 5, windowSeconds: 10 }, 100))
  const clock = clockOf(app)
  // Each login spends a unit of the address's bucket: each user logs in to a full one.
  const userWithRoles = async (app: FastifyInstance, roles: string[]) => { clock.tick(10); return logIn(app, roles) }
  await roleWithPermissions(app, 'Partner Sync', ['client-list'], { rateLimit: '20/10s', rateQuota: '1000/1d' })
  await roleWithPermissions(app, 'Trial', ['client-list'], { rateLimit: '2/10s', rateQuota: '10/1d' })
  await roleWithPermissions(app, 'Internal', ['client-list'], { rateLimit: 'off', rateQuota: 'off' })
  await roleWithPermissions(app, 'Plain', ['client-list'])

  const partner = await userWithRoles(app, ['Partner Sync'])
  const [first] = await requests(app, partner.token, 1)
  t.equal(first!.headers['ratelimit-policy'], '"role:Partner%20Sync";q=20;w=10, "role:Partner%20Sync-daily";q=1000;w=86400', 'the role\'s, by its name')
  t.equal(first!.headers.ratelimit, '"role:Partner%20Sync";r=19;t=1, "role:Partner%20Sync-daily";r=999;t=43190', 'the day\'s end 10 s nearer: each login above waited 10 s')

  const trial = await userWithRoles(app, ['Trial'])
  t.same(statuses(await requests(app, trial.token, 3)), [200, 200, 429], 'a stricter role holds its holders to it')

  const both = await userWithRoles(app, ['Trial', 'Plain'])
  const [mixed] = await requests(app, both.token, 1)
  t.equal(mixed!.headers['ratelimit-policy'], '"default";q=5;w=10, "default-daily";q=100;w=86400', 'a role of none has the default, which is more generous than Trial\'s')

  const split = await userWithRoles(app, ['Trial', 'Partner Sync'])
  t.equal((await requests(app, split.token, 1))[0]!.headers['ratelimit-policy'], '"role:Partner%20Sync";q=20;w=10, "role:Partner%20Sync-daily";q=1000;w=86400')

  const internal = await userWithRoles(app, ['Internal', 'Trial'])
  const unlimited = await requests(app, internal.token, 30)
  t.same(statuses(unlimited), Array(30).fill(200), '`off` is the most generous: no limit')
  t.equal(unlimited[0]!.headers.ratelimit, undefined, 'nor any field')
  t.same((await app.inject({ url: '/api/usage', headers: bearer(internal.token) })).json<{ data: object }>().data, { policy: { rate: null, quota: null }, rate: null, quota: null })

  const none = await userWithRoles(app, [])
  t.equal((await requests(app, none.token, 1, '/api/usage'))[0]!.headers['ratelimit-policy'], '"default";q=5;w=10, "default-daily";q=100;w=86400', 'a user of no role: the default')

  const metric = await app.metrics.registry.getSingleMetric('requests_limited_total')!.get()
  t.same(metric.values.map(({ labels, value }) => [labels, value]), [[{ policy: 'role:Trial' }, 1]], 'refusals counted by the policy\'s name, never a user')
})

t.test('a role\'s policy set through the API: checked, audited, and holding from its holders\' next request on every instance', async t => {
  const db = await createDatabase(t, { migrated: true })
  const [one, two] = [await buildApp(t, testConfig(db, limited({ count: 100, windowSeconds: 10 }))), await buildApp(t, testConfig(db, limited({ count: 100, windowSeconds: 10 })))]
  clockOf(one, two)
  const admin = await userWithRoles(one, ['Admin'])
  const role = await roleWithPermissions(one, 'Reader', ['client-list'])
  const reader = await userWithRoles(one, ['Reader'])
  t.equal((await requests(two, reader.token, 1))[0]!.headers['ratelimit-policy'], '"default";q=100;w=10', 'cached on the second instance with the default')

  for (const [body, param] of [[{ rate_limit: '5/500ms' }, 'rate_limit'], [{ rate_limit: '5/2d' }, 'rate_limit'], [{ rate_quota: '100/1h' }, 'rate_quota'], [{ rate_limit: 'fast' }, 'rate_limit'], [{ rate_quota: 7 }, 'rate_quota']] as const) {
    const res = await one.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: bearer(admin.token), payload: body })
    t.match(res.json(), { statusCode: 400, message: new RegExp(param) }, `${JSON.stringify(body)}: 400`)
  }

  const changed = await one.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: bearer(admin.token), payload: { rate_limit: '50/10s' } })
  t.equal(changed.statusCode, 200)
  t.match(changed.json(), { data: { rate_limit: '50/10s', rate_quota: null } })
  t.ok(await within(2_000, async () => (await requests(two, reader.token, 1))[0]!.headers['ratelimit-policy'] === '"role:Reader";q=50;w=10'), 'the other instance hears of it')
  t.equal((await requests(one, reader.token, 1))[0]!.headers['ratelimit-policy'], '"role:Reader";q=50;w=10', 'this one at once')

  const audit = await one.inject({ url: `/api/audit?resource[eq]=role&resource_id[eq]=${role.id}&action[eq]=update`, headers: bearer(admin.token) })
  t.match(audit.json(), { data: [{ action: 'update', before: { rate_limit: null }, after: { rate_limit: '50/10s' } }] }, 'the change audited, as it was and as it became')

  const replaced = await one.inject({ method: 'PUT', url: `/api/roles/${role.id}`, headers: bearer(admin.token), payload: { name: 'Reader', permission: ['client-list'] } })
  t.match(replaced.json(), { data: { rate_limit: null, rate_quota: null } }, 'a replace without a policy leaves none of its own')
  const created = await one.inject({ method: 'POST', url: '/api/roles', headers: bearer(admin.token), payload: { name: 'Bulk', permission: [], rate_quota: '100000/24h' } })
  t.match(created.json(), { data: { name: 'Bulk', rate_limit: null, rate_quota: '100000/24h' } })
})

t.test('an API key\'s own policy: spent beside its owner\'s, never above it, changed by PATCH, read with key_id', async t => {
  const app = await build(t, limited({ count: 20, windowSeconds: 60 }, 1000))
  const clock = clockOf(app)
  const owner = await userWithRoles(app, ['Admin'])

  const above = await makeKey(app, owner.token, { rate_limit: '30/1m', rate_quota: '2000/1d' })
  t.match(above.res.json(), { statusCode: 400, code: 'invalid_body', message: /rate_limit must allow no more than the owner's rate limit, 20\/1m.*rate_quota must allow no more than the owner's daily quota, 1000\/1d/ })
  t.match((await makeKey(app, owner.token, { rate_limit: 'off' })).res.json(), { statusCode: 400 }, 'a key has no `off`: null is none of its own')
  t.match((await makeKey(app, owner.token, { rate_limit: '5/500ms' })).res.json(), { statusCode: 400, message: /rate_limit must have a window of whole seconds/ })

  const key = await makeKey(app, owner.token, { rate_limit: '3/1m' })
  t.equal(key.res.statusCode, 201)
  t.match(key.res.json(), { data: { rate_limit: '3/1m', rate_quota: null } })
  const viaKey = await requests(app, key.secret, 4)
  t.same(statuses(viaKey), [200, 200, 200, 429])
  t.equal(viaKey[0]!.headers['ratelimit-policy'], '"default";q=20;w=60, "default-daily";q=1000;w=86400, "key";q=3;w=60', 'both policies announced, the owner\'s first')
  t.equal(viaKey[0]!.headers.ratelimit, '"default";r=15;t=3, "default-daily";r=995;t=43200, "key";r=2;t=20', 'what is left of each: the owner spent 4 before (three refused keys and this one)')
  t.match(viaKey[3]!.json(), { code: 'rate_limited', message: /^This API key's rate limit of 3 units per 1m is spent; retry in 20 s$/ })
  t.equal(viaKey[3]!.headers['retry-after'], '20')
  const token = await requests(app, owner.token, 1)
  t.equal(token[0]!.headers.ratelimit, '"default";r=12;t=3, "default-daily";r=992;t=43200', 'the owner\'s token is served from what is left: the key\'s refusal cost the owner nothing')

  const usage = await app.inject({ url: `/api/usage?key_id=${key.id!}`, headers: bearer(owner.token) })
  t.same(usage.json<{ data: object }>().data, { policy: { rate: { name: 'key', count: 3, window_seconds: 60 }, quota: null }, rate: { remaining: 0, reset_seconds: 20 }, quota: null })

  const patched = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(owner.token), payload: { rate_limit: '6/1m', name: 'sync 2' } })
  t.equal(patched.statusCode, 200)
  t.match(patched.json(), { data: { name: 'sync 2', rate_limit: '6/1m' }, message: 'API key updated' })
  clock.tick(10)
  t.equal((await requests(app, key.secret, 1))[0]!.statusCode, 429, 'until the key\'s first request under it, the old pace: half a unit in 10 s')
  clock.tick(10)
  t.equal((await requests(app, key.secret, 1))[0]!.statusCode, 200, 'from then on the new: a unit in 10 s')
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(owner.token), payload: { rate_quota: '5000/1d' } })).json(),
    { statusCode: 400, message: /rate_quota must allow no more than/ })
  const cleared = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(owner.token), payload: { rate_limit: null } })
  t.match(cleared.json(), { data: { rate_limit: null, rate_quota: null } })
  clock.tick(60)
  t.equal((await requests(app, key.secret, 1))[0]!.headers['ratelimit-policy'], '"default";q=20;w=60, "default-daily";q=1000;w=86400', 'none of its own: its owner\'s alone')
  t.same((await app.inject({ url: `/api/usage?key_id=${key.id!}`, headers: bearer(owner.token) })).json<{ data: object }>().data, { policy: { rate: null, quota: null }, rate: null, quota: null })

  const audit = await app.inject({ url: `/api/audit?resource[eq]=key&resource_id[eq]=${key.id!}&action[eq]=update`, headers: bearer(owner.token) })
  t.match(audit.json(), { data: [{ before: { rate_limit: '6/1m' }, after: { rate_limit: null } }, { before: { name: 'sync', rate_limit: '3/1m' }, after: { name: 'sync 2', rate_limit: '6/1m' } }] }, 'each change audited, the newest first')

  const other = await userWithRoles(app, ['User'])
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(other.token), payload: { name: 'mine' } })).json(), { statusCode: 404 }, 'another\'s key, without user-edit: not found')
  await roleWithPermissions(app, 'Slow', ['client-list'], { rateLimit: '5/1m' })
  const slow = await userWithRoles(app, ['Slow'])
  const slowKey = await makeKey(app, slow.token)
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${slowKey.id!}`, headers: bearer(owner.token), payload: { rate_limit: '10/1m' } })).json(),
    { statusCode: 400, message: /owner's rate limit, 5\/1m/ }, 'a user-edit holder sets another\'s key within that user\'s policy, not their own')
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${slowKey.id!}`, headers: bearer(owner.token), payload: { rate_limit: '2/1m' } })).json(), { data: { rate_limit: '2/1m' } })
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${slowKey.id!}`, headers: bearer(owner.token), payload: { rate_limit: '2/60' } })).json(), { data: { rate_limit: '2/1m' } },
    'the same policy in other words: the words stored stay')
  const [same] = (await app.inject({ url: `/api/audit?resource[eq]=key&resource_id[eq]=${slowKey.id!}&action[eq]=update&limit=1`, headers: bearer(owner.token) })).json<{ data: object[] }>().data
  t.match(same, { before: {}, after: {} }, 'audited as no change')
  t.match((await app.inject({ url: `/api/usage?key_id=${key.id!}`, headers: bearer(other.token) })).json(), { statusCode: 403, code: 'permission_denied' }, 'another\'s key\'s usage needs user-list')
  t.match((await app.inject({ url: '/api/usage?key_id=999999', headers: bearer(owner.token) })).json(), { statusCode: 404 })
  t.match((await app.inject({ url: `/api/usage?key_id=${key.id!}&user_id=${owner.id}`, headers: bearer(owner.token) })).json(), { statusCode: 400, code: 'invalid_parameter', param: 'key_id' })
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(key.secret), payload: { name: 'self' } })).json(), { statusCode: 403, code: 'access_token_required' }, 'a key changes no key')
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(owner.token), payload: {} })).json(), { statusCode: 400 })
})

t.test('a request refused by either allowance costs the other nothing', async t => {
  const app = await build(t, limited({ count: 4, windowSeconds: 60 }))
  clockOf(app)
  const owner = await userWithRoles(app, ['Admin'])
  const key = await makeKey(app, owner.token, { rate_limit: '3/1m' })
  await requests(app, owner.token, 2)
  t.same(statuses(await requests(app, key.secret, 2)), [200, 429], 'the owner\'s 4 spent: the key\'s creation, two requests, one of the key\'s')
  const keyAllowance = { caller: `key:${key.id!}`, policy: namedPolicy('key', { count: 3, windowSeconds: 60 }, null) }
  t.equal((await app.rateLimits.usage(keyAllowance)).rate?.remaining, 2, 'the key spent one: the owner\'s refusal cost it nothing')

  const other = await userWithRoles(app, ['Admin'])
  const strict = await makeKey(app, other.token, { rate_limit: '1/1m' })
  const strictly = await requests(app, strict.secret, 3)
  t.same(statuses(strictly), [200, 429, 429])
  t.match(strictly[1]!.json(), { message: /^This API key's rate limit of 1 unit per 1m is spent/ })
  t.match((await requests(app, other.token, 1))[0]!.headers, { ratelimit: '"default";r=1;t=15' }, 'the owner spent two (the key\'s creation, its request): its refusals gave theirs back')
})

t.test('a costly request through a key of a small count costs its owner in full', async t => {
  const app = await build(t, limited(null, 1000))
  clockOf(app)
  const owner = await userWithRoles(app, ['Admin'])
  const key = await makeKey(app, owner.token, { rate_limit: '1/1s' })
  const costly = await app.inject({ url: '/api/clients?limit=1000&count=exact', headers: bearer(key.secret) })
  t.equal(costly.statusCode, 200)
  t.equal(costly.headers.ratelimit, '"default-daily";r=985;t=43200, "key";r=0;t=1', 'the owner 14 (and 1 for the key\'s creation), the key its count of 1')
})

t.test('a key and its owner asked at once: every refusal is the one whose units are spent, and the key keeps the rest', async t => {
  const app = await build(t, limited({ count: 20, windowSeconds: 10 }))
  const clock = clockOf(app)
  const owner = await userWithRoles(app, ['Admin'])
  const key = await makeKey(app, owner.token, { rate_quota: '100/1d' })
  const answers = await Promise.all(Array.from({ length: 200 }, () => app.inject({ url: '/api/clients', headers: bearer(key.secret) })))
  t.equal(statuses(answers).filter(status => status === 200).length, 19, 'the owner\'s 20 less the key\'s creation')
  const refusals = answers.filter(res => res.statusCode === 429).map(res => res.json<{ message: string }>().message)
  t.same([...new Set(refusals)], ['The rate limit of 20 units per 10s is spent; retry in 1 s'], 'each by the owner\'s rate, none by the key\'s quota')
  clock.tick(10)
  const usage = await app.inject({ url: `/api/usage?key_id=${key.id!}`, headers: bearer(owner.token) })
  t.match(usage.json(), { data: { quota: { used: 19, remaining: 81 } } }, 'the key spent what was served')
})

t.test('a policy lowered holds from the next request: units taken ahead under the old one serve it no more', async t => {
  const app = await build(t, limited(null))
  clockOf(app)
  const owner = await userWithRoles(app, ['Admin'])
  const key = await makeKey(app, owner.token, { rate_limit: '800/10s' })
  // Sequential requests: each lease is sized after the last, up to a hundred units.
  t.same(statuses(await requests(app, key.secret, 30)), Array(30).fill(200))
  const lowered = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(owner.token), payload: { rate_limit: '2/10s' } })
  t.equal(lowered.statusCode, 200)
  const after = await requests(app, key.secret, 4)
  t.same(statuses(after), [200, 200, 429, 429], 'the new count of 2, from what the old left')
  t.same(after.map(res => res.headers.ratelimit), ['"key";r=1;t=5', '"key";r=0;t=5', '"key";r=0;t=5', '"key";r=0;t=5'])
})

t.test('a policy raised starts from what the old one left: the time since its last take refills at the old rate', async t => {
  const app = await build(t, limited(null))
  const clock = clockOf(app)
  const owner = await userWithRoles(app, ['Admin'])
  const key = await makeKey(app, owner.token, { rate_limit: '5/1m' })
  t.same(statuses(await requests(app, key.secret, 6)), [200, 200, 200, 200, 200, 429])
  // 30 s idle: 2.5 units back at 5/1m (300 at 600/1m, had the new rate refilled them).
  clock.tick(30)
  t.equal((await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(owner.token), payload: { rate_limit: '600/1m' } })).statusCode, 200)
  const usage = await app.inject({ url: `/api/usage?key_id=${key.id!}`, headers: bearer(owner.token) })
  t.match(usage.json(), { data: { rate: { remaining: 2 } } }, 'the usage says so too')
  t.same(statuses(await requests(app, key.secret, 3)), [200, 200, 429], 'the two units the old rate gave back, then the new pace')
  clock.tick(1)
  t.same(statuses(await requests(app, key.secret, 11)), [...Array(10).fill(200), 429], 'a second later: ten units of 600/1m')
})

t.test('a policy lowered on one instance holds on every instance: units another took ahead under the old one, given back, do not lift it', async t => {
  const db = await createDatabase(t, { migrated: true })
  const [one, two] = [await buildApp(t, testConfig(db, limited(null))), await buildApp(t, testConfig(db, limited(null)))]
  // The clock stands still: nothing refills, every unit served is one the bucket held.
  clockOf(one, two)
  const owner = await userWithRoles(one, ['Admin'])
  const key = await makeKey(one, owner.token, { rate_limit: '800/10s' })
  // Each instance holds units taken ahead under 800/10s: sequential requests size its leases up.
  for (const app of [one, two]) t.same(statuses(await requests(app, key.secret, 30)), Array(30).fill(200))
  t.equal((await one.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(owner.token), payload: { rate_limit: '80/10s' } })).statusCode, 200)

  const burst = await requests(one, key.secret, 100)
  t.same(statuses(burst), [...Array(80).fill(200), ...Array(20).fill(429)], 'the new count, on the instance that changed it')
  // The other instance's units of the old policy go back: as its timer does, every lease of it.
  await two.rateLimits.leases.giveBack(true)
  t.same(statuses(await requests(one, key.secret, 10)), Array(10).fill(429), 'nothing more on the first instance')
  const heard = await within(2_000, async () => {
    const [res] = await requests(two, key.secret, 1)
    t.equal(res!.statusCode, 429, 'nothing more on the second')
    return res!.headers['ratelimit-policy'] === '"key";q=80;w=10'
  })
  t.ok(heard, 'the second instance heard of the change')
  await one.rateLimits.leases.giveBack(true)
  t.same(statuses(await requests(two, key.secret, 5)), Array(5).fill(429), 'nor once the first gives back what it holds')
})

t.test('a quota refused while another instance holds its last units: retry within seconds, not at midnight', async t => {
  const db = await createDatabase(t, { migrated: true })
  const [one, two] = [await buildApp(t, testConfig(db, limited(null))), await buildApp(t, testConfig(db, limited(null)))]
  const clock = clockOf(one, two)
  const owner = await userWithRoles(one, ['Admin'])
  const key = await makeKey(one, owner.token, { rate_quota: '400/1d' })
  // 380 on the first instance, whose leases (up to 50 units) have taken all 400 by then.
  t.same(statuses(await requests(one, key.secret, 380)), Array(380).fill(200))
  const refused = (await requests(two, key.secret, 1))[0]!
  t.equal(refused.statusCode, 429)
  t.ok(Number(refused.headers['retry-after']) <= 6, `Retry-After ${refused.headers['retry-after']} s: the first instance gives back its units within 6 s`)
  t.match(refused.json(), { code: 'rate_limited', message: /daily quota of 400 units is spent/ })

  await one.rateLimits.leases.giveBack(true)
  clock.tick(6)
  t.same(statuses(await requests(two, key.secret, 21)), [...Array(20).fill(200), 429], 'the 20 the first instance had left, on the second')
  clock.tick(7)
  const spent = (await requests(two, key.secret, 1))[0]!
  t.equal(spent.headers['retry-after'], String(12 * 3600 - 13), 'all spent and none out: until midnight UTC')
})

t.test('a key above its owner\'s policy since a role changed: its name still changes, a part set is checked', async t => {
  const app = await build(t, limited(null))
  clockOf(app)
  const admin = await userWithRoles(app, ['Admin'])
  const role = await roleWithPermissions(app, 'Partner', ['client-list'], { rateLimit: '100/1m' })
  const partner = await userWithRoles(app, ['Partner'])
  const key = await makeKey(app, partner.token, { rate_limit: '50/1m' })
  t.equal(key.res.statusCode, 201)
  t.equal((await app.inject({ method: 'PATCH', url: `/api/roles/${role.id}`, headers: bearer(admin.token), payload: { rate_limit: '10/1m' } })).statusCode, 200)
  const renamed = await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(partner.token), payload: { name: 'renamed' } })
  t.match(renamed.json(), { data: { name: 'renamed', rate_limit: '50/1m' } }, 'a name alone is not refused for the part it leaves')
  t.match((await app.inject({ method: 'PATCH', url: `/api/keys/${key.id!}`, headers: bearer(partner.token), payload: { rate_limit: '50/1m' } })).json(),
    { statusCode: 400, message: /owner's rate limit, 10\/1m/ }, 'the part set again is checked')
  const served = await requests(app, key.secret, 9)
  t.same(statuses(served), [...Array(8).fill(200), 429], 'the owner\'s 10 hold the key (two spent on the changes above)')
})

t.test('a key\'s usage: to a caller without user-list, any key not their own is refused alike', async t => {
  const app = await build(t, limited({ count: 100, windowSeconds: 60 }))
  clockOf(app)
  const admin = await userWithRoles(app, ['Admin'])
  const user = await userWithRoles(app, ['User'])
  const adminKey = await makeKey(app, admin.token, { rate_limit: '5/1m' })
  const revoked = await makeKey(app, admin.token, { rate_limit: '5/1m' })
  await app.inject({ method: 'DELETE', url: `/api/keys/${revoked.id!}`, headers: bearer(admin.token) })
  const asked = async (token: string, id: number) => (await app.inject({ url: `/api/usage?key_id=${id}`, headers: bearer(token) })).json<{ statusCode?: number, message?: string }>()
  const [live, gone, none] = [await asked(user.token, adminKey.id!), await asked(user.token, revoked.id!), await asked(user.token, 999_999)]
  t.match(live, { statusCode: 403 })
  t.same(gone, live, 'a revoked key: the same answer')
  t.same(none, live, 'no such key: the same answer')
  t.match(await asked(admin.token, revoked.id!), { statusCode: 404 }, 'with user-list: not found')
})

t.test('a key whose own bucket PostgreSQL does not answer for in time: 503, and its owner\'s unit back', async t => {
  const app = await build(t, config => {
    config.rateLimits = { rate: { count: 10, windowSeconds: 60 }, quota: null }
    config.timeouts.dbStatement = 300
  })
  clockOf(app)
  const owner = await userWithRoles(app, ['Admin'])
  const key = await makeKey(app, owner.token, { rate_limit: '5/1m' })
  await requests(app, key.secret, 1)
  const holder = await app.knex.transaction()
  await holder.raw('select * from rate_buckets where key = ? for update', [`key:${key.id!}`])
  t.match(await app.inject({ url: '/api/clients', headers: bearer(key.secret) }), { statusCode: 503 })
  await holder.rollback()
  t.match((await requests(app, owner.token, 1))[0]!.headers, { ratelimit: '"default";r=7;t=6' }, 'the owner spent three (the key\'s creation, its request, this one): the 503 cost nothing')
})
