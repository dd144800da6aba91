// Runs once before the test files (tap's `before`): starts the embedded PostgreSQL
// that the tests share, unless DB_HOST names another server.
import { testEmbeddedPostgres } from './test-database-server.js'

// As lib/process/config.ts decides: DB_HOST names another server.
if (!process.env.DB_HOST?.trim()) await testEmbeddedPostgres.start()
