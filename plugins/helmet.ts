import fp from 'fastify-plugin'
import helmet from '@fastify/helmet'

/**
 * helmet's security headers on every response: no sniffing, no framing, HSTS, a strict
 * Content-Security-Policy (the API answers JSON; the documentation page's assets are local).
 */
export default fp(async (fastify) => {
  await fastify.register(helmet, { global: true })
}, { name: 'helmet' })
