import fp from 'fastify-plugin'
import sensible from '@fastify/sensible'

/** `reply.notFound()`, `fastify.httpErrors` and friends. */
export default fp(async (fastify) => {
  await fastify.register(sensible)
}, { name: 'sensible' })
