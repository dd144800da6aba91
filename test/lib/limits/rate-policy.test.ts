import t from 'tap'
import { aboveOwner, keyPolicy, limitField, namedPolicy, ownPolicyProblems, policyField, roleLabel, samePolicy, userPolicy } from '../../../lib/limits/rate-policy.js'

const both = namedPolicy('default', { count: 600, windowSeconds: 60 }, 10_000)

t.test('the fields name the rate by the policy and the quota by the policy\'s name and "-daily"', async t => {
  t.equal(policyField(both), '"default";q=600;w=60, "default-daily";q=10000;w=86400')
  t.equal(policyField({ ...both, quota: null }), '"default";q=600;w=60')
  t.equal(policyField({ ...both, rate: null }), '"default-daily";q=10000;w=86400')
  t.equal(limitField(both, { rate: { remaining: 598, reset: 1 }, quota: { remaining: 9998, reset: 43_210 } }), '"default";r=598;t=1, "default-daily";r=9998;t=43210')
  t.equal(limitField(both, { rate: { remaining: 600 } }), '"default";r=600', 'a full bucket: no time until more')
})

const fallback = namedPolicy('default', { count: 600, windowSeconds: 60 }, 10_000)
const role = (name: string, rateLimit: string | null, rateQuota: string | null = null) => ({ name, rate_limit: rateLimit, rate_quota: rateQuota })

t.test('a user has, of each part, the most generous of their roles\' policies; a role of none has the default', async t => {
  t.equal(userPolicy(fallback, []), fallback, 'no role: the default')
  t.equal(userPolicy(fallback, [role('A', null)]), fallback, 'a role of none: the default itself')
  t.same(userPolicy(fallback, [role('Slow', '10/1m', '100/1d')]), { name: 'role:Slow', rate: { count: 10, windowSeconds: 60 }, quota: 100, quotaName: 'role:Slow-daily' }, 'a stricter role alone holds its holder to it')
  t.same(userPolicy(fallback, [role('Slow', '10/1m', '100/1d'), role('Plain', null)]), fallback, 'beside a role of none, the default')
  t.same(userPolicy(fallback, [role('Burst', '6000/1h', '5/1d'), role('Steady', '20/1s', 'off')]),
    { name: 'role:Steady', rate: { count: 20, windowSeconds: 1 }, quota: null, quotaName: 'role:Steady-daily' }, 'each part its own: 20 a second beats 6000 an hour; off beats any quota')
  t.same(userPolicy(fallback, [role('Even', '600/1m'), role('Bigger Burst', '1200/2m')]).name, 'role:Bigger%20Burst', 'the same units a second: the larger burst')
  t.same(userPolicy(fallback, [role('Bigger Burst', '1200/2m'), role('Even', '600/1m')]).name, 'role:Bigger%20Burst', 'in any order')
  t.same(userPolicy(fallback, [role('Odd', '5/500ms', '100/1h')]), fallback, 'a form the service cannot read (written outside it): none of its own')
  const off = namedPolicy('default', null, null)
  t.same(userPolicy(off, [role('Limited', '10/1s')]).rate, { count: 10, windowSeconds: 1 }, 'with the default off, a role alone holds its holders to its own')
  t.same(userPolicy(off, [role('Limited', '10/1s'), role('Plain', null)]).rate, null, 'beside a role of none, no limit: the default')
})

t.test('a role\'s policy is named by "role:" and its name as a URL has it: one name for one role, never another policy\'s', async t => {
  t.equal(roleLabel('Partner Sync'), 'role:Partner%20Sync')
  t.equal(roleLabel('Élève "quoted" \\ role'), 'role:%C3%89l%C3%A8ve%20%22quoted%22%20%5C%20role', 'ASCII, no quote or backslash: a structured-field String')
  // Names that one made lower case and of fewer characters would have made one.
  const names = ['A B', 'A-B', 'a b', 'default', 'key', 'x', 'x-daily', 'x%2Ddaily']
  const labels = names.flatMap(name => [roleLabel(name), `${roleLabel(name)}-daily`])
  t.equal(new Set([...labels, 'default', 'default-daily', 'key', 'key-daily']).size, labels.length + 4, 'no two the same')
  t.equal(roleLabel('x-daily'), 'role:x%2Ddaily', 'no rate\'s name is a quota\'s')
})

t.test('one policy read twice is the same; a part changed is another', async t => {
  t.ok(samePolicy(fallback, namedPolicy('default', { count: 600, windowSeconds: 60 }, 10_000)))
  t.notOk(samePolicy(fallback, namedPolicy('default', { count: 2, windowSeconds: 60 }, 10_000)))
  t.notOk(samePolicy(fallback, namedPolicy('default', { count: 600, windowSeconds: 10 }, 10_000)))
  t.notOk(samePolicy(fallback, namedPolicy('default', null, 10_000)))
  t.notOk(samePolicy(fallback, namedPolicy('default', { count: 600, windowSeconds: 60 }, null)))
  t.notOk(samePolicy(fallback, namedPolicy('key', { count: 600, windowSeconds: 60 }, 10_000)))
})

t.test('a key\'s own policy: none, a part, both; never above its owner\'s', async t => {
  t.equal(keyPolicy({ rate_limit: null, rate_quota: null }), undefined)
  t.same(keyPolicy({ rate_limit: '5/1s', rate_quota: null }), namedPolicy('key', { count: 5, windowSeconds: 1 }, null))
  t.same(keyPolicy({ rate_limit: 'nonsense', rate_quota: '100/1d' }), namedPolicy('key', null, 100), 'a part it cannot read: none')
  t.same(keyPolicy({ rate_limit: null, rate_quota: '100/1h' }), undefined)
  const key = namedPolicy('key', { count: 700, windowSeconds: 60 }, 20_000)
  t.same(aboveOwner(key, fallback), {
    rate_limit: ['must allow no more than the owner\'s rate limit, 600/1m'],
    rate_quota: ['must allow no more than the owner\'s daily quota, 10000/1d']
  })
  t.same(aboveOwner(key, namedPolicy('default', null, null)), {}, 'an owner of no limit: any')
  t.same(aboveOwner(namedPolicy('key', { count: 10, windowSeconds: 1 }, null), fallback), {}, 'as fast as the owner, a smaller burst')
  t.same(ownPolicyProblems({ rate_limit: '1/0s', rate_quota: '5/1h' }, true), { rate_limit: ['must have a window of whole seconds, from 1s to 1d'], rate_quota: ['must be <count>/1d (10000/1d), or off'] })
  t.same(ownPolicyProblems({ rate_limit: 'off', rate_quota: '5/1h' }, false), { rate_limit: ['must be <count>/<duration> (600/1m, 20/10s)'], rate_quota: ['must be <count>/1d (10000/1d)'] }, 'a key\'s: no off offered')
  t.same(ownPolicyProblems({ rate_limit: null }, true), {})
})
