import fp from 'fastify-plugin'
import cors from '@fastify/cors'

/** CORS for the origins of CORS_ORIGIN only; without it, browsers on other origins are refused. */
export default fp(async (fastify) => {
  const origins = fastify.config.corsOrigins
  if (origins.length === 0) return
  await fastify.register(cors, {
    origin: origins.includes('*') ? '*' : origins,
    methods: ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'],
    exposedHeaders: ['Location', 'Link', 'Retry-After', 'WWW-Authenticate'],
    maxAge: 600
  })
}, { name: 'cors', dependencies: ['config'] })
