import fp from 'fastify-plugin'

/**
 * 404 in the error body for a route that does not exist, counted per client IP: a scanner
 * walking the URL space is answered 429 past NOT_FOUND_RATE_LIMIT_IP in a window.
 */
export default fp(async (fastify) => {
  fastify.setNotFoundHandler({ preHandler: fastify.throttle('not-found', fastify.config.auth.rateLimit.notFoundPerIp) }, async (request) => {
    throw fastify.httpErrors.notFound(`Route ${request.method} ${request.url.split('?')[0]} not found`)
  })
}, { name: 'not-found', dependencies: ['errors', 'throttle', 'sensible'] })
