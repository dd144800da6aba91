import type { Knex } from 'knex'
import type { Held, RateStore, Taken } from './rate-leases.js'
import type { RatePolicy } from './rate-policy.js'

/** A policy's arguments of `rate_take`: the bucket's size and refill a second, and the day's quota. */
const policyArgs = ({ rate, quota }: RatePolicy) => [rate?.count ?? null, rate === null ? null : rate.count / rate.windowSeconds, quota]

/**
 * The leases' side in PostgreSQL (db/migrations/20261208000000_rate_usage.ts and
 * 20261212000000_rate_units_given_back.ts): takes, reads, units given back, and the sweep. Times go as the service's clock has them, in ms.
 */
export function rateStore (knex: Knex): RateStore & { sweep (): Promise<void> } {
  return {
    async take ({ key, at, policy, cost, wanted, returned, returnedUnder, charge }) {
      const { rows: [row] } = await knex.raw<{ rows: [{ granted: string, tokens: number, used: string | null, leased_ms: number | null }] }>(
        'select granted, tokens, used, leased_ms from rate_take(?, to_timestamp(?::double precision / 1000), ?, ?, ?, ?, ?, ?, ?, ?)',
        [key, at, ...policyArgs(policy), cost, wanted, returned, returnedUnder?.rate?.count ?? null, charge])
      return { granted: Number(row.granted), tokens: row.tokens, used: Number(row.used ?? 0), leasedAt: row.leased_ms } satisfies Taken
    },

    async read (key, at) {
      const { rows: [row] } = await knex.raw<{ rows: [{ tokens: number | null, taken_at: number | null, per_second: number | null, used: string | null }] }>(`
        select b.tokens, extract(epoch from b.taken_at)::double precision * 1000 as taken_at, b.per_second,
          (select used from rate_quotas q where q.key = k.key and q.day = (to_timestamp(?::double precision / 1000) at time zone 'UTC')::date) as used
        from (select ?::text as key) k left join rate_buckets b on b.key = k.key`, [at, key])
      return { tokens: row.tokens, takenAt: row.taken_at, perSecond: row.per_second, used: Number(row.used ?? 0) } satisfies Held
    },

    // In key order: two instances closing at once lock the same rows in the same order.
    async giveBack (at, units) {
      await knex.raw(`
        select rate_give_back(b.key, to_timestamp(?::double precision / 1000), b.capacity, b.quota, b.units)
        from (select * from unnest(?::text[], ?::double precision[], ?::bigint[], ?::bigint[]) as u(key, capacity, quota, units) order by key) b`,
      [at, units.map(unit => unit.key), units.map(unit => unit.policy.rate?.count ?? null), units.map(unit => unit.policy.quota), units.map(unit => unit.units)] as Knex.ValueDict[string][])
    },

    // A bucket untouched for a day is full again under any policy (a window is a day at most);
    // yesterday's quota is kept for a late reader.
    async sweep () {
      await knex.raw(`
        delete from rate_buckets where taken_at < now() - interval '1 day';
        delete from rate_quotas where day < (now() at time zone 'UTC')::date - 1`)
    }
  }
}
