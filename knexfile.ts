// Settings for the knex CLI (`npx knex --knexfile dist/knexfile.js migrate:latest`),
// read from the same environment variables as the service.
import { loadConfig } from './lib/config.js'
import { knexConfig } from './lib/knex-config.js'

export default knexConfig(loadConfig())
