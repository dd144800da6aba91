import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { UnavailableError } from './errors.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * Takes one of the instance's BULK_CONCURRENCY slots for an import or an export; none free:
     * 503 with Retry-After. Each holds one of the pool's connections for minutes: more at once
     * would leave the other requests none. Returns the slot's release, for the caller to call
     * once, when its work on the database has ended.
     */
    holdBulkSlot: () => () => void
  }
}

/** The imports and exports of this instance under way, at most BULK_CONCURRENCY. */
export default fp(async (fastify) => {
  const limit = fastify.config.bulkConcurrency
  let held = 0
  fastify.decorateRequest('holdBulkSlot', function (this: FastifyRequest) {
    if (held >= limit) throw new UnavailableError(`The ${limit} imports and exports this instance runs at once (BULK_CONCURRENCY) are under way: try again shortly`)
    held++
    return () => { held-- }
  })
}, { name: 'bulk-slots', dependencies: ['config', 'errors'] })
