import fp from 'fastify-plugin'
import cors from '@fastify/cors'

/** CORS for the origins of CORS_ORIGIN only; without it, browsers on other origins are refused. */
export default fp(async (fastify) => {
  const origins = fastify.config.corsOrigins
  if (origins.length === 0) return
  // Before @fastify/cors's own hook, which would refuse such a preflight in a body of its own.
  fastify.addHook('onRequest', async (request) => {
    if (request.method === 'OPTIONS' && (!request.headers.origin || !request.headers['access-control-request-method'])) {
      throw fastify.httpErrors.badRequest('A CORS preflight needs the Origin and Access-Control-Request-Method headers')
    }
  })
  await fastify.register(cors, {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    // Every response header of the service's own that a browser client has a use for: a
    // browser shows a script only the CORS-safelisted ones and these.
    exposedHeaders: ['Location', 'Link', 'X-Total-Count', 'Retry-After', 'WWW-Authenticate', 'ETag', 'Idempotent-Replayed', 'X-Request-Id', 'traceparent', 'RateLimit-Policy', 'RateLimit'],
    maxAge: 600
  })
}, { name: 'cors', dependencies: ['config', 'errors', 'sensible', 'metrics'] })
