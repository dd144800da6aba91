import { once } from 'node:events'
import path from 'node:path'
import readline from 'node:readline'
import t from 'tap'
import pg from 'pg'
import { createDatabase, TEST_JWT_SECRET, within } from '../helper.js'
import { databaseProxy } from '../faults/database-proxy.js'
import { spawnServer } from './process.js'

const PRELOAD = path.join(import.meta.dirname, 'pg-invalid-date.mjs')

t.test('a database lost, then gone, and a dependency\'s warning: every line on stdout and stderr is JSON', async t => {
  const db = await createDatabase(t)
  const proxy = await databaseProxy(t, db)
  const child = spawnServer({
    ...process.env,
    JWT_SECRET: TEST_JWT_SECRET,
    DB_HOST: proxy.db.host,
    DB_PORT: String(proxy.db.port),
    DB_NAME: db.database,
    DB_USER: db.user,
    DB_PASSWORD: db.password,
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: 'info',
    MAX_EVENT_LOOP_DELAY: '60s',
    DB_CONNECT_TIMEOUT: '500ms',
    DB_ACQUIRE_TIMEOUT: '1s',
    NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${PRELOAD}`
  }, 'pipe')
  t.teardown(() => { try { process.kill(-child.pid!, 'SIGKILL') } catch { /* gone */ } })
  const lines: { stream: string, line: string }[] = []
  for (const stream of ['stdout', 'stderr'] as const) {
    readline.createInterface({ input: child[stream]! }).on('line', line => lines.push({ stream, line }))
  }
  const parsed = () => lines.flatMap(({ line }) => { try { return [JSON.parse(line) as Record<string, unknown>] } catch { return [] } })
  t.ok(await within(60_000, () => parsed().some(entry => typeof entry.msg === 'string' && entry.msg.startsWith('Server listening at'))), 'listening')
  const url = /(http:\/\/\S+)$/.exec(parsed().find(entry => String(entry.msg).startsWith('Server listening at'))!.msg as string)![1]!
  // /health/ready asks the database through knex.
  t.equal((await fetch(`${url}/health/ready`)).status, 200)

  // Its connections killed under it: knex finds them dead when it next lends them.
  const admin = new pg.Client(db)
  await admin.connect()
  await admin.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and application_name = 'student-records-api'")
  await admin.end()
  for (let i = 0; i < 3; i++) await fetch(`${url}/health/ready`)
  // Then the database gone altogether: connections refused.
  await proxy.close()
  for (let i = 0; i < 3; i++) t.equal((await fetch(`${url}/health/ready`)).status, 503, 'the database gone')
  // And pg's deprecation warning, which node would print on stderr.
  child.kill('SIGUSR2')
  t.ok(await within(10_000, () => parsed().some(entry => String(entry.msg).includes('PG_INVALID_DATE') || JSON.stringify(entry).includes('PG_INVALID_DATE'))), 'pg\'s warning is logged')

  child.kill('SIGTERM')
  await once(child, 'exit')
  const notJson = lines.filter(({ line }) => { try { JSON.parse(line); return false } catch { return true } })
  t.same(notJson, [], 'no line that is not JSON')
  t.ok(parsed().some(entry => entry.source === 'knex' && entry.level === 40), 'knex\'s warnings are log lines at warn')
})
