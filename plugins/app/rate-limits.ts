import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CodedError } from '../../lib/http/error-codes.js'
import { LEASE_MS, RateLeases, type Decision } from '../../lib/limits/rate-leases.js'
import { addressKey } from '../../lib/limits/address-key.js'
import { rateStore } from '../../lib/limits/rate-store.js'
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
    /** Charges `units` more now, whatever is left (an import's or an export's rows, counted as they went). */
    chargeUnits (units: number): void
    /** Units the request has asked of its caller's allowance so far. */
    unitsSpent: number
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
  /**
   * For a request refused before it spent anything (the token check's 401, a permission's
   * 403): spends its unit, and tells the 429's message if it is refused that too.
   */
  spendRefused (request: FastifyRequest, reply: FastifyReply): Promise<string | undefined>
  /**
   * 429 if this instance already refuses the caller: before the token check asks the database
   * about an API key it does not know, so that a flood of made-up keys costs it nothing.
   */
  holdRefused (request: FastifyRequest, reply: FastifyReply): void
}

/**
 * Rate limits and daily quotas per caller (README, "Rate limits and quotas"): each request spends units
 * of its caller's policy before its body is read, with its `RateLimit-Policy` and `RateLimit`
 * fields on the answer, or is refused 429 `rate_limited` with `Retry-After`. Held in
 * PostgreSQL across instances (lib/limits/rate-leases.ts). With RATE_LIMIT and RATE_QUOTA off,
 * no hook: requests pay nothing.
 */
export default fp(async (fastify) => {
  const policy: RatePolicy = { name: 'default', ...fastify.config.rateLimits }
  const limited = policy.rate !== null || policy.quota !== null
  const policyText = policyField(policy)
  // A request costs the policy's count at most, what it asks before its body and after both:
  // a full bucket serves any request.
  const most = Math.min(policy.rate?.count ?? Infinity, policy.quota ?? Infinity)
  const store = rateStore(fastify.knex)
  const leases = new RateLeases(store)
  const callerOf = (request: FastifyRequest) => request.user === null ? `ip:${addressKey(request.ip)}` : `user:${request.user.id}`

  /** The fields of `decision` on the answer; past the limit, 429. */
  const answer = (reply: FastifyReply, decision: Decision) => {
    reply.header('ratelimit-policy', policyText).header('ratelimit', limitField(policy, decision.standing))
    if (decision.allowed) return
    fastify.metrics.requestsLimited.inc({ policy: policy.name })
    reply.header('retry-after', String(decision.retryAfter))
    throw new CodedError('rate_limited', decision.spent === 'quota'
      ? `The daily quota of ${policy.quota!} units is spent; it is renewed at midnight UTC, in ${decision.retryAfter} s`
      : `The rate limit of ${policy.rate!.count} units per ${spoken(policy.rate!.windowSeconds * 1_000)} is spent; retry in ${decision.retryAfter} s`)
  }

  /** Spends `cost` more of the caller's units, with the fields on the answer; 429 if they are not there. */
  const spend = async (request: FastifyRequest, reply: FastifyReply, cost: number) => {
    const units = Math.min(cost, most - request.unitsSpent)
    if (units <= 0) return
    const decision = await leases.spend(callerOf(request), policy, units)
    if (decision.allowed) request.unitsSpent += units
    answer(reply, decision)
  }

  /** Charges `cost` more of the caller's units (the request's total is the count at most); negative, gives them back. */
  const charge = (request: FastifyRequest, cost: number) => {
    const units = Math.min(cost, most - request.unitsSpent)
    if (units === 0) return
    request.unitsSpent += units
    leases.charge(callerOf(request), policy, units)
      .catch((error: unknown) => request.log.warn({ err: error }, 'could not charge a request\'s units to its caller\'s rate limit'))
  }

  fastify.decorate('rateLimits', {
    policy,
    leases,
    callerOf,
    usage: async caller => leases.usage(caller, policy),
    sweep: store.sweep,
    holdRefused (request, reply) {
      const refusal = limited ? leases.refusing(callerOf(request), policy) : undefined
      if (refusal !== undefined) answer(reply, refusal)
    },
    async spendRefused (request, reply) {
      if (!limited || request.unitsSpent > 0 || request.routeOptions.config?.rateLimited === false) return undefined
      try {
        await spend(request, reply, 1)
        return undefined
      } catch (error) {
        if (error instanceof CodedError) return error.message
        // The database failing: the refusal is answered as it is.
        request.log.warn({ err: error }, 'could not count a refused request against its caller\'s rate limit')
        return undefined
      }
    }
  } satisfies RateLimits)
  sweepHourly(fastify, 'the rate limits\' buckets and quotas', store.sweep)
  fastify.decorateRequest('unitsSpent', 0)
  fastify.decorateRequest('spendUnits', async function (this: FastifyRequest, reply: FastifyReply, units: number) {
    if (limited) await spend(this, reply, units)
  })
  fastify.decorateRequest('chargeUnits', function (this: FastifyRequest, units: number) {
    if (limited && units > 0) charge(this, units)
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
  // A 503 (the service busy, the database out of reach) changed nothing and may be sent again:
  // it costs nothing, and says nothing of the limits.
  fastify.addHook('onSend', async (request, reply) => {
    if (reply.statusCode !== 503) return
    reply.removeHeader('ratelimit-policy').removeHeader('ratelimit')
    if (request.unitsSpent > 0) charge(request, -request.unitsSpent)
  })
}, { name: 'rate-limits', dependencies: ['config', 'knex', 'metrics'] })
