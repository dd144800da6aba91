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
