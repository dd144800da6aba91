import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { emailKey } from '../../lib/auth/email.js'
import { addressKey } from '../../lib/limits/address-key.js'
import { prepare } from '../../lib/db/prepared-query.js'
import { countAttempt, type Attempt, type AttemptCount } from '../../lib/auth/attempt-counts.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hook factory: counts the attempt per IP (at most `perIp`) and per e-mail of the body, or 429. */
    throttle: (scope: string, perIp?: number) => (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    /**
     * The keys of an attempt for a route that counts it in a statement of its own
     * (lib/auth/attempt-counts.ts's `countAttempt`, beside what else the statement does), and the check of its counts.
     */
    attempt: (scope: string, request: FastifyRequest, email: string | undefined, perIp?: number) => Attempt
  }
}

/** Counters whose window has passed; kept, they would add up to a row per client IP and per address ever tried. */
const SWEEP = 'delete from rate_limits where reset_at <= now()'

/**
 * The throttle of attempts (logins, registrations, unknown URLs): counters kept in PostgreSQL,
 * so that the limits hold across instances, one fixed window per key, counted and checked in a
 * single statement. A route hooks `throttle(scope)`, or, to count in a statement that does more
 * (login), takes the keys of its `attempt` and `countAttempt`'s SQL.
 */
export default fp(async (fastify) => {
  const { perEmail, windowSeconds } = fastify.config.auth.rateLimit

  // Every instance sweeps, once a window (at most every 10 minutes): the delete is cheap, and
  // a counter swept while it is counted again just starts a new window.
  const sweep = setInterval(() => {
    fastify.pgPool.query(SWEEP)
      .catch((error: unknown) => fastify.log.warn({ err: error }, 'could not sweep the expired rate-limit counters'))
  }, Math.min(windowSeconds, 600) * 1000).unref()
  fastify.addHook('onClose', async () => clearInterval(sweep))

  // On the pool of the hot paths, as it runs on every register and 404: parsed and planned
  // once per connection, not per attempt.
  const hit = prepare<[windowSeconds: number, ipKey: string, emailCounter: string | null], AttemptCount>(
    fastify.database, 'throttle.hit',
    (seconds, ipKey, emailCounter) => countAttempt(fastify.knex, seconds, ipKey, emailCounter))

  fastify.decorate('attempt', (scope: string, request: FastifyRequest, email: string | undefined, perIp = fastify.config.auth.rateLimit.perIp): Attempt => {
    const ipKey = `${scope}:ip:${addressKey(request.ip)}`
    // Counted under the form that also decides which user the address names.
    const emailCounter = email === undefined ? null : `${scope}:email:${emailKey(email)}`
    return {
      windowSeconds,
      ipKey,
      emailCounter,
      check (reply, counts) {
        const over = counts.filter(({ key, hits }) => hits > (key === ipKey ? perIp : perEmail))
        if (over.length > 0) {
          fastify.metrics.rateLimitRejections.inc({ scope })
          reply.header('retry-after', String(Math.max(1, ...over.map(count => count.retry_after))))
          throw fastify.httpErrors.tooManyRequests('Too many attempts; try again later')
        }
      }
    }
  })

  fastify.decorate('throttle', (scope: string, perIp?: number) => async (request: FastifyRequest, reply: FastifyReply) => {
    // Before validation, so that a malformed body counts too: the e-mail only if it is a string.
    const email = (request.body as { email?: unknown } | undefined)?.email
    const counted = fastify.attempt(scope, request, typeof email === 'string' ? email : undefined, perIp)
    const { rows } = await hit([counted.windowSeconds, counted.ipKey, counted.emailCounter])
    counted.check(reply, rows)
  })
}, { name: 'throttle', dependencies: ['config', 'knex', 'sensible', 'metrics'] })
