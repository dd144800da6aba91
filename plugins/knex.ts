import fp from 'fastify-plugin'
import knex, { type Knex } from 'knex'
import { knexConfig } from '../lib/knex-config.js'

declare module 'fastify' {
  interface FastifyInstance {
    knex: Knex
  }
}

/** The database connection pool, migrated to the latest schema before the app serves. */
export default fp(async (fastify) => {
  const db = knex(knexConfig(fastify.config))
  fastify.decorate('knex', db)
  fastify.addHook('onClose', async () => db.destroy())
  await db.migrate.latest()
}, { name: 'knex', dependencies: ['config'] })
