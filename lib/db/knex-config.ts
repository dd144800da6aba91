import { inspect } from 'node:util'
import type { Knex } from 'knex'
import type { LoadedConfig } from '../process/config.js'
import { EmbeddedPostgres } from './embedded-postgres.js'
import { migrationSource } from './migrations.js'
import { SESSION_OPTIONS, types } from './pg-types.js'
import { PooledKnexClient } from './pooled-client.js'
import { ServiceKnexClient } from './service-client.js'

/** Whether the service's connections go through a transaction-mode pooler (DB_POOLER=transaction). */
export function throughPooler (config: LoadedConfig): boolean {
  return config.dbPooler === 'transaction'
}

/** What knex's messages are written to: the service's logger (pino's methods). */
export interface KnexLogger {
  warn: (fields: object, message: string) => void
  error: (fields: object, message: string) => void
  debug: (fields: object, message: string) => void
}

/**
 * knex's `log` option: its warnings (a connection that failed, with its stack), errors and
 * deprecations go to the logger as JSON lines, where knex itself would print them with
 * console.log.
 */
export function knexLog (logger: KnexLogger): NonNullable<Knex.Config['log']> {
  const fields = { source: 'knex' }
  // Its debug messages (with knex's `debug`) may be objects.
  const text = (message: unknown) => typeof message === 'string' ? message : inspect(message)
  return {
    warn: message => logger.warn(fields, text(message)),
    error: message => logger.error(fields, text(message)),
    deprecate: message => logger.warn(fields, text(message)),
    debug: message => logger.debug(fields, text(message))
  }
}

/**
 * The knex settings of the service: the knex CLI's and the migrations' (their own pools), and
 * the connection settings of the knex plugin's one pool. `direct`:
 * connections to PostgreSQL itself (DB_DIRECT_HOST, DB_DIRECT_PORT), past any pooler, for what
 * needs a session of its own. `logger`: where knex's messages go (without it, the console).
 */
export function knexConfig (config: LoadedConfig, { direct = false, logger }: { direct?: boolean, logger?: KnexLogger } = {}): Knex.Config {
  const db = config.db ?? new EmbeddedPostgres(config.dataDir).connection
  const server = direct && config.dbDirect !== null ? { ...db, ...config.dbDirect } : db
  const common = {
    ...server,
    types,
    application_name: 'student-records-api',
    // A database that is down or overloaded makes requests fail fast with 503, not hang.
    connectionTimeoutMillis: config.timeouts.dbConnect
  }
  const pooled = throughPooler(config) && !direct
  return {
    // The pooler takes no session settings: the statement and idle-transaction limits are its
    // own or the role's there (docs/deployment.md), and the time zone and date style travel
    // as parameters it carries (lib/db/pooled-client.ts).
    client: pooled ? PooledKnexClient : ServiceKnexClient,
    connection: pooled
      ? common
      : {
          ...common,
          options: SESSION_OPTIONS,
          statement_timeout: config.timeouts.dbStatement,
          idle_in_transaction_session_timeout: config.timeouts.dbIdleInTransaction
        },
    pool: { min: 0, max: config.dbPoolMax },
    acquireConnectionTimeout: config.timeouts.dbAcquire,
    migrations: { migrationSource, tableName: 'knex_migrations' },
    ...(logger && { log: knexLog(logger) })
  }
}

/** How long start-up's own connections (the migration, the administrator's check) wait to connect. */
export const STARTUP_CONNECT_MS = 60_000

/**
 * The knex settings for start-up's work, on connections of its own that may take their time:
 * beside other instances migrating and starting, a connection within the requests'
 * DB_CONNECT_TIMEOUT and DB_ACQUIRE_TIMEOUT is not always to be had on a loaded machine, and
 * the instance would fail to start (seen in CI runs). Nor is a migration's statement held to
 * a request's DB_STATEMENT_TIMEOUT: an index built on a large table, or the wait for another
 * instance's migration, takes longer, and would stop start-up (a connection through a pooler
 * carries no such setting).
 */
export function startupKnexConfig (config: Knex.Config): Knex.Config {
  const connection = config.connection as Knex.PgConnectionConfig & { statement_timeout?: number }
  return {
    ...config,
    connection: {
      ...connection,
      connectionTimeoutMillis: STARTUP_CONNECT_MS,
      ...(connection.statement_timeout !== undefined && { statement_timeout: 0 })
    } as Knex.PgConnectionConfig,
    acquireConnectionTimeout: STARTUP_CONNECT_MS
  }
}
