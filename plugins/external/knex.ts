import fp from 'fastify-plugin'
import knex, { type Knex } from 'knex'
import pg from 'pg'
import { knexConfig, throughPooler } from '../../lib/db/knex-config.js'
import { migrateToLatest, pendingMigrations } from '../../lib/db/migrate.js'
import { PooledClient } from '../../lib/db/pooled-client.js'
import { waitForDatabase } from '../../lib/db/wait-for-database.js'
import { ServiceClient, ServicePool } from '../../lib/db/service-client.js'
import type { Database } from '../../lib/db/prepared-query.js'
import type { AppOptions } from '../../lib/process/config.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** knex, running on `pgPool`'s connections. */
    knex: Knex
    /** The process's one pool: knex's queries and transactions, and the prepared queries of the hot paths (lib/db/prepared-query.ts). */
    pgPool: pg.Pool
    /** Both, as the repositories' prepared queries take them. */
    database: Database
  }
}

/**
 * The database connection pool, of at most DB_POOL_MAX connections, that knex and the
 * prepared queries share (knex's `connectionPool`); migrated to the latest schema before the
 * app serves (MIGRATE=false: only checked to be there).
 */
export default fp<AppOptions>(async (fastify, { config: settings }) => {
  const config = knexConfig(settings, { logger: fastify.log })
  const { dbAcquire, dbConnect } = settings.timeouts
  const Client = throughPooler(settings) ? PooledClient : ServiceClient
  // pg's pool bounds a request's wait for a connection (a free one, or a new one opened) by its
  // connectionTimeoutMillis, DB_ACQUIRE_TIMEOUT, and hands its options on to the connections it
  // opens: theirs is DB_CONNECT_TIMEOUT again.
  const pool = new ServicePool({
    ...config.connection as pg.ClientConfig,
    max: settings.dbPoolMax,
    connectionTimeoutMillis: dbAcquire,
    Client: class extends Client {
      constructor (options?: pg.ClientConfig) { super({ ...options, connectionTimeoutMillis: dbConnect }) }
    }
  })
  // An idle connection that the server closes is dropped from the pool; without a listener it would end the process.
  pool.on('error', error => fastify.log.warn({ err: error }, 'idle database connection lost'))
  // One lent out that fails (killed, reset) fails its query, whose caller answers for it, and
  // the pool drops it on release. pg emits the error on the client too, where the pool listens
  // only while it is idle: unheard, it would end the process.
  pool.on('connect', client => client.on('error', error => fastify.log.debug({ err: error }, 'database connection lost under a query')))
  // knex's own pool settings (`pool`, `acquireConnectionTimeout`) give way to the pool it is given.
  const db = knex({ client: config.client, migrations: config.migrations, log: config.log, connectionPool: pool })
  fastify.decorate('knex', db)
  fastify.decorate('pgPool', pool)
  fastify.decorate('database', { knex: db, pool })
  // The pool ends first: it waits for the queries under way, which knex releases to it. knex
  // leaves a pool it was given to its owner, and once destroyed it has no pool to release to,
  // and a connection still lent out would keep pool.end() waiting forever.
  fastify.addHook('onClose', async () => {
    await pool.end()
    await db.destroy()
  })
  // A database started alongside (compose, a pod beside it) may not answer yet: start-up waits
  // for it, up to DB_STARTUP_WAIT, rather than exit and leave it to a restart policy.
  const direct = knexConfig(settings, { direct: true, logger: fastify.log })
  await waitForDatabase(direct.connection as pg.ClientConfig, settings.timeouts.dbStartupWait, fastify.log)
  if (settings.migrate) {
    await migrateToLatest(direct)
    return
  }
  // MIGRATE=false: a deploy step has migrated (npm run migrate), or has not yet, and then the
  // instance would answer 500s on a schema it does not know.
  const pending = await pendingMigrations(db)
  if (pending.length > 0) {
    throw new Error(`The database lacks ${pending.length} migration(s) of this release (${pending.join(', ')}): run npm run migrate, or start with MIGRATE=true`)
  }
}, { name: 'knex' })
