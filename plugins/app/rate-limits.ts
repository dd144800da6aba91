import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { CodedError } from '../../lib/http/error-codes.js'
import { GIVE_BACK_MS, RateLeases, type Decision } from '../../lib/limits/rate-leases.js'
import { addressKey } from '../../lib/limits/address-key.js'
import { rateStore } from '../../lib/limits/rate-store.js'
import { limitField, limits, namedPolicy, policyField, userPolicy, type RatePolicy, type Standing } from '../../lib/limits/rate-policy.js'
import { sweepHourly } from '../../lib/db/hourly-sweep.js'
import { spoken } from '../../lib/process/duration.js'
import { costOf } from '../../lib/limits/costs.js'
import { rolePolicies } from '../../lib/auth/caller-queries.js'

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
    /** Units the request has asked of its caller's allowances so far (each is charged its policy's count at most). */
    unitsSpent: number
  }
  interface FastifyContextConfig {
    /** false: the route spends nothing of any limit (the health probes, which balancers call). */
    rateLimited?: false
  }
}

const unitCount = (count: number) => count === 1 ? '1 unit' : `${count} units`

/** An allowance a request spends: whose (`user:<id>`, `key:<id>`, `ip:<address>`), under which policy. */
export interface Allowance { caller: string, policy: RatePolicy }

export interface RateLimits {
  /** The policy of anonymous callers, and of users whose roles have none of their own (RATE_LIMIT, RATE_QUOTA); `rate` and `quota` both null when off. */
  policy: RatePolicy
  /** The allowances a request spends, in turn: its user's, then its key's if the key has a policy of its own; or its address's. */
  allowancesOf (request: FastifyRequest): Allowance[]
  /** The policy of user `userId`, from their roles (lib/limits/rate-policy.ts's userPolicy), read in `db`. */
  policyOf (userId: number, db?: Knex): Promise<RatePolicy>
  /** What is left of an allowance (GET /api/usage), and what the day has used. */
  usage (allowance: Allowance): Promise<Standing & { used: number }>
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
 * of its caller's allowances before its body is read (its user's, under the most generous of
 * their roles' policies or the default; its API key's too, if the key has a stricter one of its
 * own; an anonymous caller's address's), with their `RateLimit-Policy` and `RateLimit` fields on
 * the answer, or is refused 429 `rate_limited` with `Retry-After`. Held in PostgreSQL across
 * instances (lib/limits/rate-leases.ts). A request whose caller has no policy pays nothing.
 */
export default fp(async (fastify) => {
  const { rate, quota } = fastify.config.rateLimits
  const policy = namedPolicy('default', rate, quota)
  const store = rateStore(fastify.knex)
  const leases = new RateLeases(store)

  const allowancesOf = (request: FastifyRequest): Allowance[] => {
    const user = request.user
    if (user === null) return limits(policy) ? [{ caller: `ip:${addressKey(request.ip)}`, policy }] : []
    // The owner's first: a request their allowance refuses costs the key nothing, so a key's
    // units are never away on a request that its owner's may yet refuse.
    const allowances: Allowance[] = []
    if (limits(user.policy)) allowances.push({ caller: `user:${user.id}`, policy: user.policy })
    if (user.keyPolicy !== undefined) allowances.push({ caller: `key:${user.keyId!}`, policy: user.keyPolicy })
    return allowances
  }
  // A request costs each allowance its policy's count at most, what it asks before its body and
  // after both: a full bucket serves any request. Each its own: a key of a small count does not
  // make its owner's charge small.
  const capped = ({ policy }: Allowance, asked: number) => Math.min(asked, policy.rate?.count ?? Infinity, policy.quota ?? Infinity)
  /** The units of each allowance that `cost` more of a request that asked `asked` so far is charged. */
  const unitsOf = (allowances: readonly Allowance[], asked: number, cost: number) => allowances.map(allowance => capped(allowance, asked + cost) - capped(allowance, asked))
  // The RateLimit-Policy field of each policy, written once.
  const policyFields = new WeakMap<RatePolicy, string>()
  const policyText = (policy: RatePolicy) => {
    let text = policyFields.get(policy)
    if (text === undefined) policyFields.set(policy, text = policyField(policy))
    return text
  }

  /** The fields of the allowances and what is left of those asked; past a limit, 429. */
  const answer = (reply: FastifyReply, allowances: readonly Allowance[], decisions: ReadonlyArray<Decision | undefined>) => {
    // Written by hand, not mapped and joined: every limited answer comes this way.
    let policies = ''
    let left = ''
    let refusal = -1
    for (let i = 0; i < allowances.length; i++) {
      const { policy } = allowances[i]!
      policies += (i === 0 ? '' : ', ') + policyText(policy)
      const decision = decisions[i]
      if (decision === undefined) continue
      left += (left === '' ? '' : ', ') + limitField(policy, decision.standing)
      if (!decision.allowed) refusal = i
    }
    reply.header('ratelimit-policy', policies).header('ratelimit', left)
    if (refusal === -1) return
    const decision = decisions[refusal] as Extract<Decision, { allowed: false }>
    const { policy, caller } = allowances[refusal]!
    fastify.metrics.requestsLimited.inc({ policy: decision.spent === 'rate' ? policy.name : policy.quotaName })
    reply.header('retry-after', String(decision.retryAfter))
    const whose = caller.startsWith('key:') ? 'This API key\'s' : 'The'
    throw new CodedError('rate_limited', decision.spent === 'quota'
      ? `${whose} daily quota of ${unitCount(policy.quota!)} is spent; it is renewed at midnight UTC, in ${decision.retryAfter} s`
      : decision.spent === 'lent'
        ? `${whose} daily quota of ${unitCount(policy.quota!)} is spent, but for units taken ahead for other requests; retry in ${decision.retryAfter} s`
        : `${whose} rate limit of ${unitCount(policy.rate!.count)} per ${spoken(policy.rate!.windowSeconds * 1_000)} is spent; retry in ${decision.retryAfter} s`)
  }

  /**
   * Spends `cost` more units of each of the request's allowances, in turn, with the fields on
   * the answer; 429 if one has not got them, and what the others gave goes back. Told at once
   * (no promise) when this instance's leases serve, as they do most requests; else a promise.
   */
  const spend = (request: FastifyRequest, reply: FastifyReply, allowances: readonly Allowance[], cost: number): Promise<void> | undefined => {
    if (cost <= 0) return undefined
    const units = unitsOf(allowances, request.unitsSpent, cost)
    // The allowances this cost charges, by index: not those this request has charged their
    // count already.
    const asked = allowances.flatMap((_, i) => units[i]! > 0 ? [i] : [])
    if (asked.length === 0) {
      request.unitsSpent += cost
      return undefined
    }
    const decisions: Array<Decision | undefined> = []
    /** Gives back what the allowances asked before the `k`-th gave. */
    const giveBackBefore = (k: number) => { for (const j of asked.slice(0, k)) chargeTo(request, allowances[j]!, -units[j]!) }
    /** Notes the `k`-th asked allowance's decision; refused, gives the others' units back and throws the 429 with the fields. */
    const decided = (k: number, decision: Decision) => {
      decisions[asked[k]!] = decision
      if (decision.allowed) return
      giveBackBefore(k)
      answer(reply, allowances, decisions)
    }
    const spent = () => {
      request.unitsSpent += cost
      answer(reply, allowances, decisions)
    }
    /** Asks the database for the `from`-th asked allowance and those after it, in turn. */
    const ask = async (from: number) => {
      for (let k = from; k < asked.length; k++) {
        const i = asked[k]!
        const { caller, policy } = allowances[i]!
        // The database failing (503): what the others gave goes back.
        decided(k, await leases.spend(caller, policy, units[i]!).catch((error: unknown) => { giveBackBefore(k); throw error }))
      }
      spent()
    }
    for (let k = 0; k < asked.length; k++) {
      const i = asked[k]!
      const { caller, policy } = allowances[i]!
      const here = leases.spendHere(caller, policy, units[i]!)
      if (here === undefined) return ask(k)
      decided(k, here)
    }
    spent()
    return undefined
  }

  const chargeTo = (request: FastifyRequest, { caller, policy }: Allowance, units: number) => {
    leases.charge(caller, policy, units)
      .catch((error: unknown) => request.log.warn({ err: error }, 'could not charge a request\'s units to its caller\'s rate limit'))
  }

  /** Charges `cost` more of the request's allowances (each one's total is its count at most); negative, gives them back. */
  const charge = (request: FastifyRequest, cost: number) => {
    const allowances = allowancesOf(request)
    const units = unitsOf(allowances, request.unitsSpent, cost)
    request.unitsSpent += cost
    allowances.forEach((allowance, i) => { if (units[i] !== 0) chargeTo(request, allowance, units[i]!) })
  }

  fastify.decorate('rateLimits', {
    policy,
    leases,
    allowancesOf,
    policyOf: async (userId, db = fastify.knex) => userPolicy(policy, await rolePolicies(db, userId)),
    usage: async ({ caller, policy }) => leases.usage(caller, policy),
    sweep: store.sweep,
    holdRefused (request, reply) {
      const allowances = allowancesOf(request)
      const refusal = allowances.length === 0 ? undefined : leases.refusing(allowances[0]!.caller, allowances[0]!.policy)
      if (refusal !== undefined) answer(reply, allowances, [refusal])
    },
    async spendRefused (request, reply) {
      const allowances = allowancesOf(request)
      if (allowances.length === 0 || request.unitsSpent > 0 || request.routeOptions.config?.rateLimited === false) return undefined
      try {
        await spend(request, reply, allowances, 1)
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
    const allowances = allowancesOf(this)
    if (allowances.length > 0) await spend(this, reply, allowances, units)
  })
  fastify.decorateRequest('chargeUnits', function (this: FastifyRequest, units: number) {
    if (units > 0) charge(this, units)
  })

  /* c8 ignore next 3 -- a timer; what it runs, giveBack, the tests call */
  const givingBack = setInterval(() => {
    leases.giveBack().catch((error: unknown) => fastify.log.warn({ err: error }, 'could not give back the rate limits\' unspent units'))
  }, GIVE_BACK_MS).unref()
  // Before the pool closes (onClose hooks run in the reverse order of the plugins').
  fastify.addHook('onClose', async () => {
    clearInterval(givingBack)
    await leases.giveBack(true)
      /* c8 ignore next -- the database failing as the instance closes: the units stay spent */
      .catch((error: unknown) => fastify.log.warn({ err: error }, 'could not give back the rate limits\' unspent units'))
  })

  // After every onRequest hook, the token check's among them, which names the caller; before
  // the body is read, so that a refused upload is not. A callback, not an async function: a
  // request of no policy (a role's may be set at any time, so the hook is always there) goes
  // on at once.
  fastify.addHook('preParsing', (request, reply, payload, done) => {
    const allowances = request.routeOptions.config.rateLimited === false ? [] : allowancesOf(request)
    if (allowances.length === 0) return done(null, payload)
    let asking: Promise<void> | undefined
    try {
      asking = spend(request, reply, allowances, costOf(request.query))
    } catch (error) {
      return done(error as Error)
    }
    if (asking === undefined) return done(null, payload)
    asking.then(() => done(null, payload), done)
  })
  // A 503 (the service busy, the database out of reach) changed nothing and may be sent again:
  // it costs nothing, and says nothing of the limits.
  fastify.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode === 503) {
      reply.removeHeader('ratelimit-policy').removeHeader('ratelimit')
      if (request.unitsSpent > 0) charge(request, -request.unitsSpent)
    }
    done(null, payload)
  })
}, { name: 'rate-limits', dependencies: ['config', 'knex', 'metrics'] })
