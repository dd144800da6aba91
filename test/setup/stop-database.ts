// Runs once after the test files (tap's `after`).
import { loadConfig } from '../../lib/config.js'
import { testEmbeddedPostgres } from './test-database-server.js'

if (!loadConfig().db) await testEmbeddedPostgres.stop()
