// Runs once after the test files (tap's `after`).
import { testEmbeddedPostgres } from './test-database-server.js'

// As lib/process/config.ts decides: DB_HOST names another server.
if (!process.env.DB_HOST?.trim()) await testEmbeddedPostgres.stop()
