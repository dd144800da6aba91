import knex, { type Knex } from 'knex'
import pg from 'pg'
import { startupKnexConfig } from './knex-config.js'
import type { MigrationFile } from './migrations.js'

/** The advisory lock that instances take around migrating (any constant shared by all of them). */
const MIGRATION_LOCK = 7_355_608

/**
 * Migrates to the latest schema once, however many instances start together: each takes
 * an advisory lock on a connection of its own, so the others wait and then find nothing to do
 * (knex's own lock would make them fail instead). `config` must reach PostgreSQL itself (knexConfig's
 * `direct`): a session's lock taken through a transaction-mode pooler would stay with a server
 * connection the pooler keeps, held for good.
 */
export async function migrateToLatest (config: Knex.Config): Promise<void> {
  // Connections of its own, which may take their time (lib/db/knex-config.ts).
  const startupConfig = startupKnexConfig(config)
  const lock = new pg.Client(startupConfig.connection as pg.ClientConfig)
  await lock.connect()
  const migrator = knex(startupConfig)
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK])
    await migrator.migrate.latest()
  } finally {
    await Promise.all([migrator.destroy(), lock.end()])
  }
}

/** The migrations this release has that the database has not had yet, by name. */
export async function pendingMigrations (db: Knex): Promise<string[]> {
  const [, pending] = await db.migrate.list() as [unknown[], MigrationFile[]]
  return pending.map(migration => migration.file)
}
