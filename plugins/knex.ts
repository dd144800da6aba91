import fp from 'fastify-plugin'
import knex, { type Knex } from 'knex'
import pg from 'pg'
import { knexConfig } from '../lib/knex-config.js'

declare module 'fastify' {
  interface FastifyInstance {
    knex: Knex
  }
}

/** The advisory lock that instances take around migrating (any constant shared by all of them). */
const MIGRATION_LOCK = 7_355_608

/**
 * Migrates to the latest schema once, however many instances start together: each takes
 * an advisory lock on a connection of its own, so the others wait and then find nothing to do
 * (knex's own lock would make them fail instead).
 */
async function migrate (db: Knex, connection: pg.ClientConfig): Promise<void> {
  const lock = new pg.Client(connection)
  await lock.connect()
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK])
    await db.migrate.latest()
  } finally {
    await lock.end()
  }
}

/** The database connection pool, migrated to the latest schema before the app serves. */
export default fp(async (fastify) => {
  const config = knexConfig(fastify.config)
  const db = knex(config)
  fastify.decorate('knex', db)
  fastify.addHook('onClose', async () => db.destroy())
  await migrate(db, config.connection as pg.ClientConfig)
}, { name: 'knex', dependencies: ['config'] })
