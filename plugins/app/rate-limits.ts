import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CodedError } from '../../lib/http/error-codes.js'
import { LEASE_MS, RateLeases, type Held, type RateStore, type Taken, type TakeArgs } from '../../lib/limits/rate-leases.js'
import { limitField, policyField, type RatePolicy, type Standing } from '../../lib/limits/rate-policy.js'
import { sweepHourly } from '../../lib/db/hourly-sweep.js'
import { spoken } from '../../lib/process/duration.js'
import { costOf } from '../../lib/limits/costs.js'

declare module 'fastify' {
  interface FastifyInstance {
    rateLimits: RateLimits
  }
  interface FastifyRequest {
    /**
     * Spends `units` more of the caller's allowance now, for what the request turns out to
     * be (a batch's rows): 429 if they are not there. Nothing with no policy.
     */
    spendUnits (reply: FastifyReply, units: number): Promise<void>
    /** Charges `units` more once the request is answered, whatever is left (an import's or an export's rows). */
    chargeUnits (units: number): void
    /** Units charged once the request is answered. */
    unitsToCharge: number
  }
  interface FastifyContextConfig {
    /** false: the route spends nothing of any limit (the health probes, which balancers call). */
    rateLimited?: false
  }
}

export interface RateLimits {
  /** The policy every caller has (RATE_LIMIT, RATE_QUOTA); `rate` and `quota` both null when off. */
  policy: RatePolicy
  /** The caller whose allowance a request spends: `user:<id>` for a token or key, else `ip:<address>`. */
  callerOf (request: FastifyRequest): string
  /** What is left for a caller (GET /api/usage), and what the day has used. */
  usage (caller: string): Promise<Standing & { used: number }>
  /** The leases, whose clock the tests set. */
  leases: RateLeases
  /** Deletes the buckets full again and the quotas of days gone (hourly, on every instance). */
  sweep (): Promise<void>
}

/**
 * Rate limits and daily quotas per caller (README, "Rate limits"): each request spends units
 * of its caller's policy before its body is read, with its `RateLimit-Policy` and `RateLimit`
 * fields on the answer, or is refused 429 `rate_limited` with `Retry-After`. Held in
 * PostgreSQL across instances (lib/limits/rate-leases.ts). With RATE_LIMIT and RATE_QUOTA off,
 * no hook: requests pay nothing.
 */
export default fp(async (fastify) => {
  const policy: RatePolicy = { name: 'default', ...fastify.config.rateLimits }
  const take = async ({ key, at, policy: { rate, quota }, cost, wanted, returned, charge }: TakeArgs): Promise<Taken> => {
    const { rows: [row] } = await fastify.knex.raw<{ rows: [{ granted: string, tokens: number, used: string | null }] }>(
      'select granted, tokens, used from rate_take(?, to_timestamp(?::double precision / 1000), ?, ?, ?, ?, ?, ?, ?)',
      [key, at, rate?.count ?? null, rate === null ? null : rate.count / rate.windowSeconds, quota, cost, wanted, returned, charge])
    return { granted: Number(row.granted), tokens: row.tokens, used: Number(row.used ?? 0) }
  }
  const read = async (key: string, at: number): Promise<Held> => {
    const { rows: [row] } = await fastify.knex.raw<{ rows: [{ tokens: number | null, taken_at: number | null, used: string | null }] }>(`
      select b.tokens, extract(epoch from b.taken_at)::double precision * 1000 as taken_at,
        (select used from rate_quotas q where q.key = k.key and q.day = (to_timestamp(?::double precision / 1000) at time zone 'UTC')::date) as used
      from (select ?::text as key) k left join rate_buckets b on b.key = k.key`, [at, key])
    return { tokens: row.tokens, takenAt: row.taken_at, used: Number(row.used ?? 0) }
  }
  // In key order: two instances closing at once lock the same rows in the same order.
  const giveBack: RateStore['giveBack'] = async ({ rate, quota }, at, units) => {
    await fastify.knex.raw(`
      select count(rate_take(b.key, to_timestamp(?::double precision / 1000), ?, ?, ?, 0, 0, b.units, 0))
      from (select * from unnest(?::text[], ?::bigint[]) as u(key, units) order by key) b`,
    [at, rate?.count ?? null, rate === null ? null : rate.count / rate.windowSeconds, quota, units.map(unit => unit.key), units.map(unit => unit.units)])
  }
  const leases = new RateLeases({ take, read, giveBack })
  const limits: RateLimits = {
    policy,
    leases,
    callerOf: request => request.user === null ? `ip:${request.ip}` : `user:${request.user.id}`,
    usage: async caller => leases.usage(caller, policy),
    sweep: async () => {
      // A bucket untouched for a day is full again under any policy (a window is a day at most).
      await fastify.knex.raw(`
        delete from rate_buckets where taken_at < now() - interval '1 day';
        delete from rate_quotas where day < (now() at time zone 'UTC')::date - 1`)
    }
  }
  fastify.decorate('rateLimits', limits)
  sweepHourly(fastify, 'the rate limits\' buckets and quotas', limits.sweep)

  const policyText = policyField(policy)
  const limited = policy.rate !== null || policy.quota !== null
  /** Spends `cost` of the caller's units, with the fields on the answer; 429 if they are not there. */
  const spend = async (request: FastifyRequest, reply: FastifyReply, cost: number) => {
    const decision = await leases.spend(limits.callerOf(request), policy, cost)
    reply.header('ratelimit-policy', policyText).header('ratelimit', limitField(policy, decision.standing))
    if (decision.allowed) return
    fastify.metrics.requestsLimited.inc({ policy: policy.name })
    reply.header('retry-after', String(decision.retryAfter))
    throw new CodedError('rate_limited', decision.spent === 'quota'
      ? `The daily quota of ${policy.quota!} units is spent; it is renewed at midnight UTC, in ${decision.retryAfter} s`
      : `The rate limit of ${policy.rate!.count} units per ${spoken(policy.rate!.windowSeconds * 1_000)} is spent; retry in ${decision.retryAfter} s`)
  }
  fastify.decorateRequest('unitsToCharge', 0)
  fastify.decorateRequest('spendUnits', async function (this: FastifyRequest, reply: FastifyReply, units: number) {
    if (limited && units > 0) await spend(this, reply, units)
  })
  fastify.decorateRequest('chargeUnits', function (this: FastifyRequest, units: number) {
    this.unitsToCharge += units
  })
  if (!limited) return

  /* c8 ignore next 3 -- a timer; what it runs, giveBack, the tests call */
  const givingBack = setInterval(() => {
    leases.giveBack(policy).catch((error: unknown) => fastify.log.warn({ err: error }, 'could not give back the rate limits\' unspent units'))
  }, 5 * LEASE_MS).unref()
  // Before the pool closes (onClose hooks run in the reverse order of the plugins').
  fastify.addHook('onClose', async () => {
    clearInterval(givingBack)
    await leases.giveBack(policy, true)
      /* c8 ignore next -- the database failing as the instance closes: the units stay spent */
      .catch((error: unknown) => fastify.log.warn({ err: error }, 'could not give back the rate limits\' unspent units'))
  })

  // After every onRequest hook, the token check's among them, which names the caller; before
  // the body is read, so that a refused upload is not.
  fastify.addHook('preParsing', async (request, reply, payload) => {
    if (request.routeOptions.config.rateLimited !== false) await spend(request, reply, costOf(request.query))
    return payload
  })
  fastify.addHook('onResponse', async (request) => {
    if (request.unitsToCharge <= 0) return
    leases.charge(limits.callerOf(request), policy, request.unitsToCharge)
      .catch((error: unknown) => request.log.warn({ err: error }, 'could not charge a request\'s rows to its caller\'s rate limit'))
  })
}, { name: 'rate-limits', dependencies: ['config', 'knex', 'metrics'] })
