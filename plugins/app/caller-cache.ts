import fp from 'fastify-plugin'
import { CallerCache } from '../../lib/auth/caller-cache.js'

declare module 'fastify' {
  interface FastifyInstance {
    callerCache: CallerCache
  }
}

/** `fastify.callerCache`, kept true by the database's `auth_changed` notifications. */
export default fp(async (fastify) => {
  const cache = new CallerCache(fastify.config.auth.cacheSize)
  fastify.decorate('callerCache', cache)
  if (fastify.config.auth.cacheSize === 0) return

  // The cache only works while the listening connection does: lost, it is disabled (every
  // request asks the database again) until the connection is back and listening.
  await fastify.notifications.listen('auth_changed', {
    notified: payload => cache.apply(payload),
    listening: () => cache.enable(),
    lost: () => cache.disable()
  })
}, { name: 'caller-cache', dependencies: ['config', 'notifications'] })
