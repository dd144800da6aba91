import Fastify, { type FastifyInstance, type LightMyRequestResponse, type RouteOptions } from 'fastify'
import type { Knex } from 'knex'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { chmod, mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import AutoLoad from '@fastify/autoload'
import app, { routesFolder, serverOptions } from '../app.js'
import { loadConfig, type Config, type DatabaseConfig } from '../lib/process/config.js'
import { withJwtSecret } from '../lib/process/jwt-secret.js'
import type { Argon2Options } from '../lib/auth/argon2-options.js'
import { conformToOpenApi } from './openapi-conformance.js'
import { migratedTemplate } from './setup/migrated-template.js'
import { testEmbeddedPostgres } from './setup/test-database-server.js'

/** A JWT secret for the tests, which never read one from a data folder. */
export const TEST_JWT_SECRET = 'a test secret, 32 bytes or longer, never used in production'

/** The configuration of the environment the tests run in. */
function environmentConfig (): Config {
  return withJwtSecret(loadConfig({ ...process.env, JWT_SECRET: TEST_JWT_SECRET }))
}

/** The PostgreSQL server the tests use: DB_HOST … DB_PASSWORD when set, else the embedded one. */
export function serverConnection (): DatabaseConfig {
  return environmentConfig().db ?? testEmbeddedPostgres.connection
}

/**
 * A fresh folder for a DATA_DIR (`prefix` and a random tail, in the system's temporary folder),
 * removed after the test. Readable by all: run as root, the embedded PostgreSQL runs as the
 * `postgres` user, which must reach its cluster inside.
 */
export async function tempDataDir (t: Test, prefix: string): Promise<string> {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), prefix))
  await chmod(dataDir, 0o755)
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  return dataDir
}

let databases = 0

/** The server itself, past any pooler of DB_HOST (DB_DIRECT_HOST). */
function directServer (): DatabaseConfig {
  return { ...serverConnection(), ...environmentConfig().dbDirect }
}

/**
 * A fresh database of its own for the calling test, dropped after it: empty, or `migrated`
 * (a copy of test/setup/migrated-template.ts's, as every app test starts from).
 */
export async function createDatabase (t: Test, { migrated = false }: { migrated?: boolean } = {}): Promise<DatabaseConfig> {
  const server = serverConnection()
  const template = migrated ? ` template ${await migratedTemplate(directServer())}` : ''
  // Random too: a pid comes round again within a CI run (pid_max is 32,768 here), and no
  // two test processes may ever meet in one database (a drop WITH (FORCE) cuts connections).
  const database = `test_${process.pid}_${++databases}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client(server)
  await admin.connect()
  await admin.query(`create database ${database}${template}`)
  await admin.end()
  t.teardown(async () => {
    const client = new pg.Client(server)
    await client.connect()
    await client.query(`drop database if exists ${database} with (force)`)
    await client.end()
  })
  return { ...server, database }
}

/**
 * A pg pool on a test's database. pool.end() resolves while its idle connections are still
 * closing, and the teardown's DROP DATABASE … WITH (FORCE) may end one first: the pool emits
 * that as an error, which, unheard, would end the test process (the service's pool has a
 * listener too, plugins/external/knex.ts).
 */
export function testPool (config: pg.PoolConfig): pg.Pool {
  const pool = new pg.Pool(config)
  pool.on('error', () => {})
  return pool
}

/**
 * argon2id at a minimal cost (64 KiB, one pass): tests log in and register by the dozen, and at
 * the service's cost (ARGON2_OPTIONS) hashing was half the CPU of the files that log in most. A
 * test of what the cost itself does (a stored hash's parameters, a flood of logins queued for
 * the hashing threads) asks for ARGON2_OPTIONS.
 */
export const TEST_HASHING: Argon2Options = { algorithm: 2, memoryCost: 64, timeCost: 1, parallelism: 1 }

/**
 * What a test changes of the configuration: a function that changes a copy in place
 * (`config => { config.auth.rateLimit.perIp = 5 }`), or top-level settings to replace.
 */
export type ConfigChange = Partial<Config> | ((config: Config) => void)

/** The configuration the service would read, pointed at the given database, as the test changes it. */
export function testConfig (db: DatabaseConfig, change: ConfigChange = {}): Config {
  const config = environmentConfig()
  // As with DB_HOST: no administrator is generated unless a test asks for one. Test files
  // compile TypeScript as they go and share the machine: no load shedding unless asked for.
  const base: Config = {
    ...config,
    logLevel: 'silent',
    db,
    auth: { ...config.auth, generateAdmin: false, passwordHashing: TEST_HASHING },
    timeouts: { ...config.timeouts, maxEventLoopDelay: 60_000 },
    // Many apps run at once in a test process: no metrics listener unless a test asks for one.
    metrics: null
  }
  if (typeof change !== 'function') return { ...base, ...change }
  const copy = structuredClone(base)
  change(copy)
  return copy
}

const routeLists = new WeakMap<FastifyInstance, RouteOptions[]>()

/** Every route the app registered (HEAD routes too), as the routes declared them. */
export function routesOf (app: FastifyInstance): RouteOptions[] {
  return routeLists.get(app)!
}

const routeSchemas = new WeakMap<RouteOptions, Record<string, unknown>>()

/** The shared schemas a route of `routesOf` can refer to: its plugin's, those of the plugins around it too. */
export function sharedSchemasOf (route: RouteOptions): Record<string, unknown> {
  return routeSchemas.get(route)!
}

export interface BuildOptions {
  /** A folder laid out as routes/, loaded after the app's own as app.ts loads routes/. */
  routes?: string
}

/**
 * Builds the app exactly as server.ts does, on the given database, closed after the test.
 * Every response is held to the OpenAPI document.
 */
export async function buildApp (t: Test, config: Config, options: BuildOptions = {}): Promise<FastifyInstance> {
  const fastify = Fastify(serverOptions(config))
  // Closed after the test even when it fails to start (a connection timed out on a busy
  // machine): what its plugins opened before would keep the test's process alive. Only such a
  // start's close may fail quietly, or give up after 10 s (a connection it lent out and never
  // got back would keep the pool's end waiting): the start's error is the test's failure.
  let started = false
  t.teardown(() => started
    ? fastify.close()
    : Promise.race([fastify.close().catch(() => undefined), new Promise(resolve => setTimeout(resolve, 10_000).unref())]))
  const routes: RouteOptions[] = []
  routeLists.set(fastify, routes)
  fastify.addHook('onRoute', function (route) {
    routes.push(route)
    routeSchemas.set(route, this.getSchemas())
  })
  await fastify.register(app, { config })
  if (options.routes) await fastify.register(AutoLoad, routesFolder(options.routes, { config }))
  fastify.addHook('onSend', conformToOpenApi(t, fastify))
  await fastify.ready()
  started = true
  return fastify
}

/** The app on a fresh database of its own, migrated already (its start-up finds nothing to do). */
export async function build (t: Test, change: ConfigChange = {}, options: BuildOptions = {}): Promise<FastifyInstance> {
  return buildApp(t, testConfig(await createDatabase(t, { migrated: true }), change), options)
}

/** Whether `check` comes true within `ms` milliseconds, asking every 20 ms. */
export async function within (ms: number, check: () => Promise<boolean> | boolean): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise(resolve => setTimeout(resolve, 20))
  }
  return check()
}

/** Whether `n` statements of the app's database wait on a lock within `ms` milliseconds. */
export async function lockWaiters (app: FastifyInstance, n: number, ms = 10_000): Promise<boolean> {
  return within(ms, async () => {
    const { rows } = await app.knex.raw("select count(*)::int as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'")
    return rows[0].n >= n
  })
}

/** The steps of a circle of waits that `closeCircleLast` plays out. */
export interface Circle {
  /** The other writer's first step, in its transaction: it takes what the write under test needs last. */
  other (trx: Knex.Transaction): Promise<unknown>
  /** A third transaction's step: it takes what the write under test needs first. */
  hold (trx: Knex.Transaction): Promise<unknown>
  /** The write under test. */
  write (): Promise<LightMyRequestResponse>
  /** The other writer's second step: it waits on what the write under test has taken. */
  close (trx: Knex.Transaction): Promise<unknown>
}

/**
 * Makes the write under test close a circle of waits last, so that PostgreSQL fails it and not
 * the other writer, however slow the machine: PostgreSQL looks for a circle once, at
 * deadlock_timeout after a writer starts to wait, and fails the one that looks. The other
 * writer's look is put off; the write under test waits first on the third transaction, which
 * lets go only once the other waits on the write. Needs a superuser (deadlock_timeout).
 */
export async function closeCircleLast (t: Test, app: FastifyInstance, circle: Circle): Promise<LightMyRequestResponse> {
  const other = await app.knex.transaction()
  await other.raw("set local deadlock_timeout = '10min'")
  await circle.other(other)
  const third = await app.knex.transaction()
  await circle.hold(third)
  const writing = circle.write()
  t.ok(await lockWaiters(app, 1), 'the write under test waits on the third transaction')
  // Sent now: a query of knex's runs when it is awaited.
  const closing = circle.close(other).then(() => {})
  t.ok(await lockWaiters(app, 2), 'the other writer waits on the write under test')
  await third.rollback()
  await closing
  await other.commit()
  return writing
}
