// `npm run test:pgbouncer`: the tests of both interfaces and of two instances, run through a
// PgBouncer in transaction mode in front of the PostgreSQL server of DB_HOST … DB_PASSWORD,
// with DB_POOLER=transaction (.ci/run runs it after the suite).
import { spawnSync } from 'node:child_process'
import { loadConfig } from '../../lib/process/config.js'
import { freePort } from '../server/process.js'
import { startPgBouncer } from './pgbouncer.js'

const FILES = ['test/routes/**/*.test.ts', 'test/server/instances.test.ts']

const server = loadConfig({ ...process.env, JWT_SECRET: 'not used: only the database settings are read' }).db
if (server === null) {
  console.error('Set DB_HOST (and DB_PORT … DB_PASSWORD) to the PostgreSQL server to put PgBouncer in front of')
  process.exit(2)
}
const pgbouncer = await startPgBouncer(server, await freePort(), 20)
// Coverage off, on purpose: this run checks behaviour through the pooler on part of the tests;
// the coverage is the whole suite's to hold (npm test), and tap would still measure its
// `before` script here and fail the run on it (hence --allow-incomplete-coverage too).
const tests = spawnSync('npx', ['tap', '--disable-coverage', '--allow-incomplete-coverage', ...FILES], {
  stdio: 'inherit',
  env: {
    ...process.env,
    DB_HOST: '127.0.0.1',
    DB_PORT: String(pgbouncer.port),
    DB_POOLER: 'transaction',
    DB_DIRECT_HOST: server.host,
    DB_DIRECT_PORT: String(server.port)
  }
})
pgbouncer.stop()
process.exit(tests.status ?? 1)
