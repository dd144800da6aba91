// Settings for the knex CLI (`npm run knex -- migrate:list`), read from the same
// environment variables as the service.
import { ensureCommandDatabase } from './lib/db/command-database.js'
import { loadConfig } from './lib/process/config.js'
import { knexConfig } from './lib/db/knex-config.js'
import { packageRoot } from './lib/process/package-info.js'

// The CLI moves into the knexfile's folder (dist/), so DATA_DIR is resolved against the
// package's folder, where `npm start` runs the service.

// A function, which the knex CLI calls and awaits: the embedded database is started for the
// command when no server runs it.
export default async function config () {
  const config = loadConfig(process.env, packageRoot)
  await ensureCommandDatabase(config)
  // Migrations take a session's lock: on PostgreSQL itself, past any pooler.
  return knexConfig(config, { direct: true })
}
