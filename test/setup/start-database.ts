// Runs once before the test files (tap's `before`): starts the embedded PostgreSQL
// that the tests share, unless DB_HOST names another server.
import { loadConfig } from '../../lib/config.js'
import { testEmbeddedPostgres } from './test-database-server.js'

if (!loadConfig().db) await testEmbeddedPostgres.start()
