import type { Knex } from 'knex'
import type { Config } from '../process/config.js'
import { EmbeddedPostgres } from './embedded-postgres.js'
import { migrationSource } from './migrations.js'
import { SESSION_OPTIONS, types } from './pg-types.js'

/** The knex settings of the service, shared by the knex plugin and the knex CLI. */
export function knexConfig (config: Config): Knex.Config {
  const db = config.db ?? new EmbeddedPostgres(config.dataDir).connection
  return {
    client: 'pg',
    connection: {
      ...db,
      types,
      options: SESSION_OPTIONS,
      application_name: 'student-records-api',
      // A database that is down or overloaded makes requests fail fast with 503, not hang.
      connectionTimeoutMillis: config.timeouts.dbConnect,
      statement_timeout: config.timeouts.dbStatement,
      idle_in_transaction_session_timeout: config.timeouts.dbIdleInTransaction
    },
    pool: { min: 0, max: config.dbPoolMax },
    acquireConnectionTimeout: config.timeouts.dbAcquire,
    migrations: { migrationSource, tableName: 'knex_migrations' }
  }
}

/** How long start-up's own connections (the migration, the administrator's check) wait to connect. */
export const STARTUP_CONNECT_MS = 60_000

/**
 * The knex settings for start-up's work, on connections of its own that may take their time:
 * beside other instances migrating and starting, a connection within the requests'
 * DB_CONNECT_TIMEOUT and DB_ACQUIRE_TIMEOUT is not always to be had on a loaded machine, and
 * the instance would fail to start (seen in CI runs).
 */
export function startupKnexConfig (config: Knex.Config): Knex.Config {
  return {
    ...config,
    connection: { ...config.connection as Knex.PgConnectionConfig, connectionTimeoutMillis: STARTUP_CONNECT_MS } as Knex.PgConnectionConfig,
    acquireConnectionTimeout: STARTUP_CONNECT_MS
  }
}
