import type { LoadedConfig } from '../process/config.js'
import { claimDataDir, DataDirInUse } from './data-dir-lock.js'
import { EmbeddedPostgres } from './embedded-postgres.js'

/**
 * Makes sure a command run beside the service (the knex CLI, `npm run seed`, `reset-password`) has its
 * database. With DB_HOST, that server. Otherwise the embedded PostgreSQL of DATA_DIR: used as it
 * is while a server runs it; else started for the command, which holds DATA_DIR meanwhile (a
 * server started then says so and exits), and stopped when the command exits.
 */
export async function ensureCommandDatabase (config: LoadedConfig): Promise<void> {
  if (config.db) return
  const embedded = new EmbeddedPostgres(config.dataDir)
  try {
    await claimDataDir(config.dataDir, 'a command (npm run knex, migrate, seed or reset-password)')
  } catch (error) {
    if (error instanceof DataDirInUse) return // a server holds the folder, and runs its database
    throw error
  }
  if (await embedded.start()) await embedded.stopWhenProcessExits()
}
