import t from 'tap'
import { limitField, policyField, type RatePolicy } from '../../../lib/limits/rate-policy.js'

const both: RatePolicy = { name: 'default', rate: { count: 600, windowSeconds: 60 }, quota: 10_000 }

t.test('the fields name the rate by the policy and the quota by the policy\'s name and "-daily"', async t => {
  t.equal(policyField(both), '"default";q=600;w=60, "default-daily";q=10000;w=86400')
  t.equal(policyField({ ...both, quota: null }), '"default";q=600;w=60')
  t.equal(policyField({ ...both, rate: null }), '"default-daily";q=10000;w=86400')
  t.equal(limitField(both, { rate: { remaining: 598, reset: 1 }, quota: { remaining: 9998, reset: 43_210 } }), '"default";r=598;t=1, "default-daily";r=9998;t=43210')
  t.equal(limitField(both, { rate: { remaining: 600 } }), '"default";r=600', 'a full bucket: no time until more')
})
