import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hook factory: counts the attempt per IP (at most `perIp`) and per e-mail of the body, or 429. */
    rateLimit: (scope: string, perIp?: number) => (request: FastifyRequest, reply: FastifyReply) => Promise<void>
  }
}

/**
 * Counts one attempt under each key and answers every key's count and the seconds left in its
 * window. A named prepared statement on the pool of the hot paths, as it runs on every login,
 * register and 404: parsed and planned once per connection, not per attempt.
 */
const HIT = `
  insert into rate_limits as r (key, hits, reset_at)
  select key, 1, now() + make_interval(secs => $1) from unnest($2::text[]) as key
  on conflict (key) do update set
    hits = case when r.reset_at <= now() then 1 else r.hits + 1 end,
    reset_at = case when r.reset_at <= now() then excluded.reset_at else r.reset_at end
  returning key, hits, ceil(extract(epoch from reset_at - now()))::int as retry_after`

/** Counters whose window has passed; kept, they would add up to a row per client IP and per address ever tried. */
const SWEEP = 'delete from rate_limits where reset_at <= now()'

/**
 * Attempt counters kept in PostgreSQL, so that the limits hold across instances: one
 * fixed window per key, counted and checked in a single statement.
 */
export default fp(async (fastify) => {
  const { perEmail, windowSeconds } = fastify.config.auth.rateLimit

  // Every instance sweeps, once a window (at most every 10 minutes): the delete is cheap, and
  // a counter swept while it is counted again just starts a new window.
  const sweep = setInterval(() => {
    fastify.pgPool.query({ name: 'rate-limit.sweep', text: SWEEP })
      .catch((error: unknown) => fastify.log.warn({ err: error }, 'could not sweep the expired rate-limit counters'))
  }, Math.min(windowSeconds, 600) * 1000).unref()
  fastify.addHook('onClose', async () => clearInterval(sweep))

  fastify.decorate('rateLimit', (scope: string, perIp = fastify.config.auth.rateLimit.perIp) => async (request: FastifyRequest, reply: FastifyReply) => {
    const email = (request.body as { email?: unknown } | undefined)?.email
    const keys: [string, number][] = [[`${scope}:ip:${request.ip}`, perIp]]
    if (typeof email === 'string') keys.push([`${scope}:email:${email.trim().toLowerCase()}`, perEmail])

    const { rows } = await fastify.pgPool.query<{ key: string, hits: number, retry_after: number }>({
      name: 'rate-limit.hit', text: HIT, values: [windowSeconds, keys.map(([key]) => key)]
    })

    const limits = new Map(keys)
    const over = rows.filter(row => row.hits > limits.get(row.key)!)
    if (over.length > 0) {
      reply.header('retry-after', String(Math.max(1, ...over.map(row => row.retry_after))))
      throw fastify.httpErrors.tooManyRequests('Too many attempts; try again later')
    }
  })
}, { name: 'rate-limit', dependencies: ['config', 'knex', 'sensible'] })
