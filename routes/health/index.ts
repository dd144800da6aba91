import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { packageInfo } from '../../lib/process/package-info.js'
import { UnavailableError } from '../../plugins/app/errors.js'
import { healthSchemas, healthTag } from './schema.js'

/** `/health/live` and `/health/ready`, for load balancers and orchestrators. */
const health: FastifyPluginAsyncTypebox = async (fastify) => {
  const ok = { status: 'ok' as const, version: packageInfo.version }
  fastify.declareResource({ tag: healthTag })
  fastify.get('/live', { schema: healthSchemas.live, config: { rateLimited: false } }, async () => ok)

  fastify.get('/ready', { schema: healthSchemas.ready, config: { rateLimited: false } }, async () => {
    // Shutting down: serving still, but not for new traffic (SHUTDOWN_DELAY).
    if (fastify.shuttingDown) throw new UnavailableError('The service is shutting down')
    // A database out of reach fails here and is answered 503 by the error handler.
    await fastify.knex.raw('select 1')
    return ok
  })
}

export default health
