// Migrates the service's database to this release's schema, and nothing else: a deploy step or
// an init container, so that instances started with MIGRATE=false neither race nor wait at
// start-up. Runs on DB_HOST… (past any pooler: DB_DIRECT_HOST, DB_DIRECT_PORT), or the embedded
// database of DATA_DIR, started for the command if no server runs it. Safe to run again, and
// beside instances that migrate: one migrates, the others wait and find nothing to do.
//   npm run migrate
import knex from 'knex'
import type pg from 'pg'
import { ensureCommandDatabase } from '../lib/db/command-database.js'
import { knexConfig } from '../lib/db/knex-config.js'
import { migrateToLatest, pendingMigrations } from '../lib/db/migrate.js'
import { consoleWaitLogger, waitForDatabase } from '../lib/db/wait-for-database.js'
import { loadConfig } from '../lib/process/config.js'

const config = loadConfig()
await ensureCommandDatabase(config)
const settings = knexConfig(config, { direct: true })
// As the service's start-up does: a database started alongside may not answer yet.
await waitForDatabase(settings.connection as pg.ClientConfig, config.timeouts.dbStartupWait, consoleWaitLogger)
const db = knex(settings)
try {
  const pending = await pendingMigrations(db)
  await migrateToLatest(settings)
  console.log(pending.length === 0 ? 'The database is at the latest schema already' : `Migrated: ${pending.join(', ')}`)
} finally {
  await db.destroy()
}
process.exit()
