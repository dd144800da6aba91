import fp from 'fastify-plugin'
import type { AppOptions, Config } from '../../lib/process/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

/** Exposes the configuration that server.ts (or the test helper) validated once. */
export default fp<AppOptions>(async (fastify, opts) => {
  fastify.decorate('config', opts.config)
}, { name: 'config' })
