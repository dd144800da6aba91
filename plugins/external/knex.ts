import fp from 'fastify-plugin'
import knex, { type Knex } from 'knex'
import pg from 'pg'
import { knexConfig, startupKnexConfig, throughPooler } from '../../lib/db/knex-config.js'
import { PooledClient } from '../../lib/db/pooled-client.js'
import type { Database } from '../../lib/db/prepared-query.js'

declare module 'fastify' {
  interface FastifyInstance {
    knex: Knex
    /** The pool of the prepared queries of the hot paths (lib/db/prepared-query.ts, the rate limits). */
    pgPool: pg.Pool
    /** Both, as the repositories' prepared queries take them. */
    database: Database
  }
}

/** The advisory lock that instances take around migrating (any constant shared by all of them). */
const MIGRATION_LOCK = 7_355_608

/**
 * Migrates to the latest schema once, however many instances start together: each takes
 * an advisory lock on a connection of its own, so the others wait and then find nothing to do
 * (knex's own lock would make them fail instead). On connections to PostgreSQL itself: a
 * session's lock taken through a transaction-mode pooler would stay with a server connection
 * the pooler keeps, held for good.
 */
async function migrate (config: Knex.Config): Promise<void> {
  // Connections of its own, which may take their time (lib/db/knex-config.ts).
  const patient = startupKnexConfig(config)
  const lock = new pg.Client(patient.connection as pg.ClientConfig)
  await lock.connect()
  const migrator = knex(patient)
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK])
    await migrator.migrate.latest()
  } finally {
    await Promise.all([migrator.destroy(), lock.end()])
  }
}

/**
 * The database connection pools, knex's and a plain `pg` pool on the same settings, each of
 * DB_POOL_MAX connections; migrated to the latest schema before the app serves.
 */
export default fp(async (fastify) => {
  const config = knexConfig(fastify.config)
  const connection = config.connection as pg.ClientConfig
  const db = knex(config)
  // Waiting for a free connection is bounded as knex's acquiring is.
  const pool = new pg.Pool({
    ...connection,
    max: fastify.config.dbPoolMax,
    connectionTimeoutMillis: fastify.config.timeouts.dbAcquire,
    Client: throughPooler(fastify.config) ? PooledClient : pg.Client
  })
  // An idle connection that the server closes is dropped from the pool; without a listener it would end the process.
  pool.on('error', error => fastify.log.warn({ err: error }, 'idle database connection lost'))
  fastify.decorate('knex', db)
  fastify.decorate('pgPool', pool)
  fastify.decorate('database', { knex: db, pool })
  fastify.addHook('onClose', async () => { await Promise.all([db.destroy(), pool.end()]) })
  await migrate(knexConfig(fastify.config, { direct: true }))
}, { name: 'knex', dependencies: ['config'] })
