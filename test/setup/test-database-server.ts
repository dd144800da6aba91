import path from 'node:path'
import { EmbeddedPostgres } from '../../lib/db/embedded-postgres.js'

/** The embedded server the test files share when no DB_HOST is given. */
export const testEmbeddedPostgres = new EmbeddedPostgres(path.resolve('.data', 'test'))
