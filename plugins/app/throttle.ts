import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { emailKey } from '../../lib/auth/email.js'
import { prepare } from '../../lib/db/prepared-query.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hook factory: counts the attempt per IP (at most `perIp`) and per e-mail of the body, or 429. */
    throttle: (scope: string, perIp?: number) => (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    /**
     * The keys of an attempt for a route that counts it in a statement of its own
     * (`countAttempt`, beside what else the statement does), and the check of its counts.
     */
    attempt: (scope: string, request: FastifyRequest, email: string | undefined, perIp?: number) => Attempt
  }
}

/** The count under one key, and the seconds left in its window. */
export interface AttemptCount { key: string, hits: number, retry_after: number }

export interface Attempt {
  /** The seconds of a window, and the keys to count under: the client IP's, the e-mail address's if any. */
  windowSeconds: number
  ipKey: string
  emailCounter: string | null
  /** Answers 429, with Retry-After, when a count is past its key's limit. */
  check: (reply: FastifyReply, counts: AttemptCount[]) => void
}

/**
 * Counts one attempt under each key, the second unless null (an SQL expression may name it: a
 * refresh counts under the session of its token), and answers each count and the
 * seconds left in its window: an INSERT … RETURNING, for a prepared statement of its own or
 * for a WITH of one that does more (login looks the user up in the same round trip).
 */
export const countAttempt = (knex: Knex, windowSeconds: number, ipKey: string, emailCounter: string | Knex.Raw | null) => knex.raw(`
  insert into rate_limits as r (key, hits, reset_at)
  select key, 1, now() + make_interval(secs => ?) from unnest(array[?, ?]::text[]) as key where key is not null
  on conflict (key) do update set
    hits = case when r.reset_at <= now() then 1 else r.hits + 1 end,
    reset_at = case when r.reset_at <= now() then excluded.reset_at else r.reset_at end
  returning key, hits, ceil(extract(epoch from reset_at - now()))::int as retry_after`, [windowSeconds, ipKey, emailCounter])

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
    const ipKey = `${scope}:ip:${request.ip}`
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
