// Fills the service's database with demo students: 1,000, or as many as --students says. Demo
// student n is the same on every run, so running it again adds nothing, and a larger count adds
// the rest (lib/db/demo-students.ts). Runs on DB_HOST… or the embedded database of DATA_DIR,
// started for the command if no server runs it, migrated first as `npm start` would.
//   npm run seed -- --students 10000
import { parseArgs } from 'node:util'
import knex from 'knex'
import type pg from 'pg'
import { ensureCommandDatabase } from '../lib/db/command-database.js'
import { addDemoStudents } from '../lib/db/demo-students.js'
import { knexConfig } from '../lib/db/knex-config.js'
import { migrateToLatest } from '../lib/db/migrate.js'
import { consoleWaitLogger, waitForDatabase } from '../lib/db/wait-for-database.js'
import { loadConfig } from '../lib/process/config.js'

const MOST = 10_000_000
const USAGE = `Usage: npm run seed -- [--students N] (N from 1 to ${MOST.toLocaleString('en')}; 1,000 unless given)`

let count: number
try {
  const raw = parseArgs({ options: { students: { type: 'string', default: '1000' } } }).values.students
  count = /^\d+$/.test(raw) ? Number(raw) : NaN
  if (!(count >= 1 && count <= MOST)) throw new Error(`--students must be a whole number from 1 to ${MOST}, got "${raw}"`)
} catch (error) {
  console.error(`${(error as Error).message}\n${USAGE}`)
  process.exit(2)
}

const config = loadConfig()
await ensureCommandDatabase(config)
const settings = knexConfig(config, { direct: true })
// As the service's start-up does: a database started alongside may not answer yet.
await waitForDatabase(settings.connection as pg.ClientConfig, config.timeouts.dbStartupWait, consoleWaitLogger)
await migrateToLatest(settings)
const db = knex(settings)
try {
  const added = await addDemoStudents(db, count)
  const { total } = await db('students').count({ total: '*' }).first() as { total: string }
  const number = (n: number) => n.toLocaleString('en')
  console.log(`Added ${number(added)} demo students (${number(count - added)} of the ${number(count)} were there already); the database holds ${number(Number(total))} students`)
} finally {
  await db.destroy()
}
process.exit()
