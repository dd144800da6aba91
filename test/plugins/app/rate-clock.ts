import type { FastifyInstance, LightMyRequestResponse } from 'fastify'
import type { ConfigChange } from '../../helper.js'

/** A clock the test moves: the leases' and the shared buckets' time, on every app given. */
export function clockOf (...apps: FastifyInstance[]) {
  const clock = { ms: Date.UTC(2026, 10, 28, 12, 0, 0), tick: (seconds: number) => { clock.ms += seconds * 1_000 } }
  for (const app of apps) app.rateLimits.leases.now = () => clock.ms
  return clock
}

/** RATE_LIMIT and RATE_QUOTA as a test sets them. */
export const limited = (rate: { count: number, windowSeconds: number } | null, quota: number | null = null): ConfigChange => ({ rateLimits: { rate, quota } })

export const statuses = (answers: LightMyRequestResponse[]) => answers.map(res => res.statusCode)
