// Settings for the knex CLI (`npm run knex -- migrate:list`), read from the same
// environment variables as the service.
import path from 'node:path'
import { loadConfig } from './lib/config.js'
import { knexConfig } from './lib/knex-config.js'

// The CLI moves into the knexfile's folder, so DATA_DIR is resolved against the folder
// the command was started from, as the service does.
const started = process.env.INIT_CWD ?? process.cwd()
export default knexConfig(loadConfig({ ...process.env, DATA_DIR: path.resolve(started, process.env.DATA_DIR ?? '.data') }))
