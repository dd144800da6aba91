import { createHash, randomBytes } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import pg from 'pg'
import type { DatabaseConfig } from '../../lib/process/config.js'
import { migrateToLatest } from '../../lib/db/migrate.js'
import { migrationSource } from '../../lib/db/migrations.js'

const MIGRATIONS = path.resolve(import.meta.dirname, '..', '..', 'db', 'migrations')
/** The advisory lock the test processes take around making the template (the service's is 7,355,608). */
const TEMPLATE_LOCK = 7_355_609
/** PostgreSQL's object_in_use: a database still has sessions, as a closed one's may for a moment. */
const IN_USE = '55006'

/** A digest of the migrations' names and texts: a template is named after the schema it holds. */
async function migrationsDigest (): Promise<string> {
  const digest = createHash('sha256')
  for (const file of (await readdir(MIGRATIONS)).sort()) digest.update(file).update(await readFile(path.join(MIGRATIONS, file)))
  return digest.digest('hex').slice(0, 16)
}

async function renamed (admin: pg.Client, from: string, to: string): Promise<void> {
  for (let tries = 0; ; tries++) {
    try {
      await admin.query(`alter database ${from} rename to ${to}`)
      return
    } catch (error) {
      // The migration's sessions are mostly gone already.
      if ((error as { code?: string }).code !== IN_USE || tries === 50) throw error
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  }
}

let template: Promise<string> | undefined

/**
 * The name of a database holding every migration, which the app tests' databases are copied
 * from (CREATE DATABASE … TEMPLATE): a copy is faster than migrating an empty database (about
 * a tenth off an app test file, measured on PostgreSQL 15). Made once, by the first test
 * process that asks, under an advisory lock that the others wait on; kept on the server
 * between runs, named after the migrations, so a changed one makes another (and all but the
 * newest few are dropped). `server` must be the server itself, not a pooler: the lock is the
 * session's.
 */
export function migratedTemplate (server: DatabaseConfig): Promise<string> {
  template ??= makeTemplate(server)
  return template
}

async function makeTemplate (server: DatabaseConfig): Promise<string> {
  const name = `test_template_${await migrationsDigest()}`
  const admin = new pg.Client(server)
  await admin.connect()
  try {
    await admin.query('select pg_advisory_lock($1)', [TEMPLATE_LOCK])
    // The newest first: a database's oid grows with each made.
    const { rows } = await admin.query<{ datname: string }>("select datname from pg_database where datname like 'test\\_template\\_%' order by oid desc")
    if (!rows.some(row => row.datname === name)) {
      // Built under another name, so that no test copies it half-migrated.
      const building = `${name}_${randomBytes(4).toString('hex')}`
      await admin.query(`create database ${building}`)
      await migrateToLatest({ client: 'pg', connection: { ...server, database: building }, migrations: { migrationSource } })
      await renamed(admin, building, name)
    }
    // Those of other migrations but the two newest (another checkout's tests may be using
    // them), and any left half-built: dropped unless in use.
    const others = rows.filter(row => row.datname !== name)
    for (const { datname } of others.filter((row, i) => i >= 2 || row.datname.startsWith(`${name}_`))) {
      await admin.query(`drop database if exists ${datname}`).catch(() => {})
    }
  } finally {
    // Its session's end frees the lock.
    await admin.end()
  }
  return name
}
