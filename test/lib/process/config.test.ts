import { mkdtemp, readdir, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { listeningOrigin, loadConfig } from '../../../lib/process/config.js'

const SECRET = 'x'.repeat(32)

t.test('defaults, with the embedded database; reading them writes nothing', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'config-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const config = loadConfig({ DATA_DIR: dataDir })
  t.same(await readdir(dataDir), [], 'nothing written in DATA_DIR: no jwt-secret')
  t.same(config, {
    port: 3000,
    host: 'localhost',
    workers: 1,
    logLevel: 'info',
    dataDir,
    db: null,
    dbPoolMax: 10,
    dbPooler: 'none',
    dbDirect: null,
    migrate: true,
    corsOrigins: [],
    trustProxy: [],
    auth: {
      jwtSecret: null,
      jwtTtlSeconds: 3600,
      refreshTtlSeconds: 2_592_000,
      sessionMaxAgeSeconds: 7_776_000,
      refreshReuseGraceSeconds: 10,
      adminEmail: undefined,
      adminPassword: undefined,
      generateAdmin: true,
      registerRoles: [],
      requireVerifiedEmail: false,
      mfaRequiredRoles: [],
      passkeys: { rpId: 'localhost', origins: ['http://localhost:3000'] },
      totpIssuer: 'Student Records',
      cacheSize: 10_000,
      passwordHashing: { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 },
      rateLimit: { perIp: 30, perEmail: 10, notFoundPerIp: 100, windowSeconds: 60 }
    },
    timeouts: {
      request: 30_000,
      handler: 15_000,
      keepAlive: 72_000,
      shutdownDelay: 0,
      shutdownGrace: 10_000,
      dbConnect: 2_000,
      dbStartupWait: 60_000,
      dbAcquire: 2_000,
      dbStatement: 10_000,
      dbIdleInTransaction: 10_000,
      maxEventLoopDelay: 1_000,
      slowRequest: 1_000
    },
    idempotencyTtlSeconds: 86_400,
    requireIfMatch: false,
    imports: { maxBytes: 100 * 1024 * 1024, timeoutMs: 600_000 },
    exportTimeoutMs: 600_000,
    bulkConcurrency: 2,
    audit: { enabled: true, retentionSeconds: 365 * 86_400 },
    outbox: { enabled: true, retentionSeconds: 30 * 86_400, heartbeatSeconds: 15 },
    webhooks: { allowPrivate: false, timeoutMs: 10_000, firstRetryMs: 5_000, retryForMs: 3 * 86_400_000, disableAfterMs: 5 * 86_400_000 },
    rateLimits: { rate: null, quota: null },
    mail: null,
    metrics: { host: '127.0.0.1', port: 9464 },
    tracing: null
  })
  const missing = path.join(dataDir, 'not yet')
  t.equal(loadConfig({ DATA_DIR: missing }).dataDir, missing)
  t.same(await readdir(dataDir), [], 'a DATA_DIR that does not exist is not made')
})

t.test('DB_HOST switches to that server, with the other DB_ settings', async t => {
  t.same(loadConfig({ DB_HOST: 'db.internal', JWT_SECRET: SECRET }).db, { host: 'db.internal', port: 5432, database: 'postgres', user: 'postgres', password: '' })
  t.same(loadConfig({
    DB_HOST: 'db', DB_PORT: '6543', DB_NAME: 'school', DB_USER: 'app', DB_PASSWORD: ' secret ', JWT_SECRET: SECRET
  }).db, { host: 'db', port: 6543, database: 'school', user: 'app', password: ' secret ' })
})

t.test('DB_POOLER=transaction: DB_HOST is a pooler; DB_DIRECT_HOST and DB_DIRECT_PORT reach PostgreSQL itself', async t => {
  const pooled = loadConfig({ DB_HOST: 'pgbouncer', DB_PORT: '6432', DB_POOLER: 'transaction', DB_DIRECT_HOST: 'postgres.internal', JWT_SECRET: SECRET })
  t.same([pooled.dbPooler, pooled.dbDirect], ['transaction', { host: 'postgres.internal', port: 6432 }], 'DB_DIRECT_PORT defaults to DB_PORT')
  t.same(loadConfig({ DB_HOST: 'db', DB_POOLER: 'transaction', DB_DIRECT_PORT: '5433', JWT_SECRET: SECRET }).dbDirect, { host: 'db', port: 5433 }, 'DB_DIRECT_HOST defaults to DB_HOST')
  t.same(loadConfig({ DB_HOST: 'db', DB_POOLER: 'transaction', JWT_SECRET: SECRET }).dbDirect, null, 'neither set: DB_HOST and DB_PORT')
})

t.test('MIGRATE=false: start-up does not migrate', async t => {
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, MIGRATE: 'false' }).migrate, false)
})

t.test('CORS_ORIGIN lists the origins allowed', async t => {
  t.same(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, CORS_ORIGIN: 'https://app.example.com, http://localhost:5173' }).corsOrigins,
    ['https://app.example.com', 'http://localhost:5173'])
  t.same(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, CORS_ORIGIN: '*' }).corsOrigins, ['*'])
})

t.test('TRUST_PROXY lists the proxies in front, by address or network, IPv4 or IPv6', async t => {
  const withDb = { DB_HOST: 'db', JWT_SECRET: SECRET }
  t.same(loadConfig({ ...withDb, TRUST_PROXY: '10.0.0.5' }).trustProxy, ['10.0.0.5'], 'one address')
  t.same(loadConfig({ ...withDb, TRUST_PROXY: '10.0.0.5, 172.16.0.0/12 ,fd00::/8,::1,2001:db8::7/128' }).trustProxy,
    ['10.0.0.5', '172.16.0.0/12', 'fd00::/8', '::1', '2001:db8::7/128'], 'addresses and networks, trimmed')
  t.same(loadConfig({ ...withDb, TRUST_PROXY: '10.0.0.0/8,::ffff:10.0.0.0/104,::ffff:10.0.0.1' }).trustProxy,
    ['10.0.0.0/8', '::ffff:10.0.0.0/104', '::ffff:10.0.0.1'], 'a /8 at the widest, IPv4-mapped addresses counted as IPv4')
  t.same(loadConfig({ ...withDb, TRUST_PROXY: '' }).trustProxy, [], 'empty: none')
  const anyone = /^TRUST_PROXY must name the proxies, not trust every sender \(".+"; networks of a \/8 at the widest\): a client that reaches the service around them could choose its own address$/
  const list = /^TRUST_PROXY must be a comma-separated list of the proxies' IP addresses or networks \(10\.0\.0\.5, 10\.0\.0\.0\/8, fd00::\/8\), got ".*"$/
  const refused: [string, RegExp][] = [
    ['true', anyone], ['*', anyone], ['1', anyone], ['2', anyone], ['0.0.0.0/0', anyone], ['10.0.0.1, ::/0', anyone],
    // Wider than a /8, or every IPv4 client as IPv4-mapped IPv6 addresses on a dual-stack listener.
    ['0.0.0.0/1', anyone], ['10.0.0.0/7', anyone], ['::/8', anyone], ['::ffff:0:0/96', anyone], ['::ffff:128.0.0.0/97', anyone], ['::ffff:0:0/103', anyone],
    ['false', list], ['loopback', list], ['proxy.internal', list], ['10.0.0.256', list], ['10.0.0.0/33', list], ['fd00::/129', list],
    ['10.0.0.0/8/8', list], ['10.0.0.0/', list], ['10.0.0.0/x', list], ['10.0.0.1,,10.0.0.2', list], ['10.0.0.1,', list], ['-1', list]
  ]
  for (const [value, message] of refused) {
    t.throws(() => loadConfig({ ...withDb, TRUST_PROXY: value }), { name: 'ConfigError', message }, value)
  }
  t.throws(() => loadConfig({ ...withDb, TRUST_PROXY: ' ' }), { message: /^TRUST_PROXY is blank/ })
})

t.test('authentication settings', async t => {
  const { auth } = loadConfig({
    DB_HOST: 'db',
    JWT_SECRET: SECRET,
    JWT_TTL: '15m',
    REFRESH_TTL: '7d',
    SESSION_MAX_AGE: '30d',
    REFRESH_REUSE_GRACE: '5s',
    ADMIN_EMAIL: 'root@example.com',
    ADMIN_PASSWORD: 'correct horse',
    REGISTER_ROLES: 'User, Reader ,',
    SMTP_URL: 'smtp://mail.example.com',
    REQUIRE_VERIFIED_EMAIL: 'true',
    MFA_REQUIRED_ROLES: 'Admin, Auditor',
    PUBLIC_URL: 'https://app.example.com/',
    TOTP_ISSUER: ' Acme Records ',
    AUTH_CACHE_SIZE: '0',
    AUTH_RATE_LIMIT_IP: '100',
    AUTH_RATE_LIMIT_EMAIL: '3',
    NOT_FOUND_RATE_LIMIT_IP: '50',
    AUTH_RATE_LIMIT_WINDOW: '1h'
  })
  t.same(auth, {
    jwtSecret: SECRET,
    jwtTtlSeconds: 900,
    refreshTtlSeconds: 604_800,
    sessionMaxAgeSeconds: 2_592_000,
    refreshReuseGraceSeconds: 5,
    adminEmail: 'root@example.com',
    adminPassword: 'correct horse',
    generateAdmin: false,
    registerRoles: ['User', 'Reader'],
    requireVerifiedEmail: true,
    mfaRequiredRoles: ['Admin', 'Auditor'],
    passkeys: { rpId: 'app.example.com', origins: ['https://app.example.com'] },
    totpIssuer: 'Acme Records',
    cacheSize: 0,
    passwordHashing: { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 },
    rateLimit: { perIp: 100, perEmail: 3, notFoundPerIp: 50, windowSeconds: 3600 }
  })
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, JWT_TTL: '90' }).auth.jwtTtlSeconds, 90)
  t.match(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, ADMIN_EMAIL: '', ADMIN_PASSWORD: '' }).auth, { adminEmail: undefined, adminPassword: undefined }, 'empty is unset')
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, JWT_TTL: '2d' }).auth.jwtTtlSeconds, 172800)
})

t.test('time limits take milliseconds, seconds or minutes', async t => {
  const { timeouts } = loadConfig({
    DB_HOST: 'db',
    JWT_SECRET: SECRET,
    REQUEST_TIMEOUT: '1m',
    HANDLER_TIMEOUT: '5',
    KEEP_ALIVE_TIMEOUT: '65s',
    SHUTDOWN_DELAY: '5s',
    SHUTDOWN_GRACE: '20s',
    DB_CONNECT_TIMEOUT: '500ms',
    // 0: start-up does not wait for the database.
    DB_STARTUP_WAIT: '0',
    DB_ACQUIRE_TIMEOUT: '1s',
    DB_STATEMENT_TIMEOUT: '30s',
    DB_IDLE_IN_TRANSACTION_TIMEOUT: '2m',
    MAX_EVENT_LOOP_DELAY: '250ms',
    SLOW_REQUEST: '300ms'
  })
  t.same(timeouts, {
    request: 60_000,
    handler: 5_000,
    keepAlive: 65_000,
    shutdownDelay: 5_000,
    shutdownGrace: 20_000,
    dbConnect: 500,
    dbStartupWait: 0,
    dbAcquire: 1_000,
    dbStatement: 30_000,
    dbIdleInTransaction: 120_000,
    maxEventLoopDelay: 250,
    slowRequest: 300
  })
})

t.test('every duration takes one grammar: a whole number with a unit, ms, s, m, h or d, or plain seconds', async t => {
  const withDb = { DB_HOST: 'db', JWT_SECRET: SECRET }
  const spellings: [string, number][] = [['2000ms', 2], ['2s', 2], ['2', 2], ['2m', 120], ['2h', 7_200], ['2d', 172_800]]
  for (const [value, secondsOf] of spellings) {
    const config = loadConfig({ ...withDb, JWT_TTL: value, AUDIT_RETENTION: value, HANDLER_TIMEOUT: value, SHUTDOWN_DELAY: value })
    t.same([config.auth.jwtTtlSeconds, config.audit.retentionSeconds, config.timeouts.handler, config.timeouts.shutdownDelay],
      [secondsOf, secondsOf, secondsOf * 1_000, secondsOf * 1_000], `${value}, for a lifetime, a retention and time limits alike`)
  }
  t.equal(loadConfig({ ...withDb, HANDLER_TIMEOUT: '1h' }).timeouts.handler, 3_600_000, 'a time limit in hours')
  t.equal(loadConfig({ ...withDb, DB_STATEMENT_TIMEOUT: '24d' }).timeouts.dbStatement, 24 * 86_400_000, 'up to 24 days')
  t.equal(loadConfig({ ...withDb, SHUTDOWN_DELAY: '0' }).timeouts.shutdownDelay, 0, 'SHUTDOWN_DELAY may be 0')
  t.equal(loadConfig({ ...withDb, IDEMPOTENCY_TTL: '36500d' }).idempotencyTtlSeconds, 36_500 * 86_400, 'a lifetime of up to a hundred years')
  const refused: [Record<string, string>, string][] = [
    [{ JWT_TTL: '500ms' }, 'JWT_TTL must be from 1s to 36500d, got "500ms"'],
    [{ JWT_TTL: '1500ms' }, 'JWT_TTL counts whole seconds, got "1500ms"'],
    [{ REFRESH_REUSE_GRACE: '36501d' }, 'REFRESH_REUSE_GRACE must be from 1s to 36500d, got "36501d"'],
    [{ SHUTDOWN_GRACE: '0ms' }, 'SHUTDOWN_GRACE must be from 1ms to 24d, got "0ms"'],
    [{ SHUTDOWN_DELAY: '30d' }, 'SHUTDOWN_DELAY must be from 0 to 24d, got "30d"'],
    [{ KEEP_ALIVE_TIMEOUT: '1.5s' }, 'KEEP_ALIVE_TIMEOUT must be a duration: a whole number with a unit, ms, s, m, h or d (250ms, 90s, 15m, 1h, 7d), or plain seconds, got "1.5s"'],
    [{ AUTH_RATE_LIMIT_WINDOW: '1w' }, 'AUTH_RATE_LIMIT_WINDOW must be a duration: a whole number with a unit, ms, s, m, h or d (250ms, 90s, 15m, 1h, 7d), or plain seconds, got "1w"']
  ]
  for (const [change, message] of refused) {
    t.throws(() => loadConfig({ ...withDb, ...change }), { name: 'ConfigError', message }, JSON.stringify(change))
  }
})

t.test('a bad value stops start-up with a message naming the variable', async t => {
  const withDb = { DB_HOST: 'db', JWT_SECRET: SECRET }
  const cases: [Record<string, string>, RegExp][] = [
    [{ ...withDb, PORT: 'abc' }, /^PORT must be a whole number from 0 to 65535, got "abc"$/],
    [{ ...withDb, PORT: '70000' }, /^PORT /],
    [{ ...withDb, PORT: '-1' }, /^PORT /],
    // What a JSON Schema validator's coercion would take for a number (docs/performance.md, "Libraries").
    [{ ...withDb, PORT: '0x10' }, /^PORT must be a whole number from 0 to 65535, got "0x10"$/],
    [{ ...withDb, DB_POOL_MAX: '1e3' }, /^DB_POOL_MAX must be a whole number from 1 to 1000, got "1e3"$/],
    [{ ...withDb, WORKERS: '2.0' }, /^WORKERS must be a whole number from 1 to 256, got "2.0"$/],
    [{ ...withDb, DB_PORT: '0' }, /^DB_PORT /],
    [{ ...withDb, DB_POOL_MAX: '0' }, /^DB_POOL_MAX /],
    [{ ...withDb, WORKERS: '0' }, /^WORKERS must be a whole number from 1 to 256, got "0"$/],
    [{ ...withDb, LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/],
    [{ DB_HOST: 'db' }, /^JWT_SECRET is required with DB_HOST/],
    [{ DB_HOST: 'db', JWT_SECRET: 'short' }, /^JWT_SECRET must be at least 32 bytes, got 5$/],
    [{ ...withDb, JWT_TTL: '0' }, /^JWT_TTL must be from 1s to 36500d, got "0"$/],
    [{ ...withDb, JWT_TTL: '1 hour' }, /^JWT_TTL must be a duration: a whole number with a unit, ms, s, m, h or d \(250ms, 90s, 15m, 1h, 7d\), or plain seconds, got "1 hour"$/],
    [{ ...withDb, ADMIN_EMAIL: 'a@example.com' }, /^ADMIN_PASSWORD must be set with ADMIN_EMAIL$/],
    [{ ...withDb, WEBAUTHN_RP_ID: 'example.com', WEBAUTHN_ORIGINS: 'https://app.example.com, https://evil.test' }, /^WEBAUTHN_ORIGINS must be origins \(scheme:\/\/host\[:port\]\) on the site WEBAUTHN_RP_ID names \(example\.com\), got "https:\/\/evil\.test"$/],
    [{ ...withDb, WEBAUTHN_ORIGINS: 'http://localhost:3000/login' }, /^WEBAUTHN_ORIGINS must be origins/],
    [{ ...withDb, WEBAUTHN_ORIGINS: 'not a url' }, /^WEBAUTHN_ORIGINS must be origins/],
    [{ ...withDb, TOTP_ISSUER: 'Acme: Records' }, /^TOTP_ISSUER must be 1 to 64 characters without a colon, got "Acme: Records"$/],
    [{ ...withDb, TOTP_ISSUER: 'x'.repeat(65) }, /^TOTP_ISSUER must be 1 to 64 characters without a colon/],
    [{ ...withDb, ADMIN_PASSWORD: 'long enough' }, /^ADMIN_EMAIL must be set with ADMIN_PASSWORD$/],
    [{ ...withDb, ADMIN_EMAIL: 'a@example.com', ADMIN_PASSWORD: 'short' }, /^ADMIN_PASSWORD must be 8 to 128 characters long$/],
    [{ ...withDb, AUTH_RATE_LIMIT_IP: 'many' }, /^AUTH_RATE_LIMIT_IP /],
    [{ ...withDb, HANDLER_TIMEOUT: '0' }, /^HANDLER_TIMEOUT must be from 1ms to 24d, got "0"$/],
    [{ ...withDb, DB_STATEMENT_TIMEOUT: '25d' }, /^DB_STATEMENT_TIMEOUT must be from 1ms to 24d, got "25d"$/],
    [{ ...withDb, CORS_ORIGIN: 'app.example.com' }, /^CORS_ORIGIN must be \* or a comma-separated list of origins/],
    [{ ...withDb, IDEMPOTENCY_TTL: '0' }, /^IDEMPOTENCY_TTL must be from 1s to 36500d, got "0"$/],
    [{ ...withDb, REQUIRE_IF_MATCH: 'yes' }, /^REQUIRE_IF_MATCH must be one of true, false, got "yes"$/],
    [{ ...withDb, AUDIT_LOG: 'false' }, /^AUDIT_LOG must be one of on, off, got "false"$/],
    [{ ...withDb, AUDIT_RETENTION: '0' }, /^AUDIT_RETENTION must be from 1s to 36500d, got "0"$/],
    [{ ...withDb, CHANGE_OUTBOX: 'no' }, /^CHANGE_OUTBOX must be one of on, off, got "no"$/],
    [{ ...withDb, EVENTS_HEARTBEAT: '30s' }, /^EVENTS_HEARTBEAT must be shorter than REQUEST_TIMEOUT \(30000 ms\), after which an idle stream's connection is closed, got "30s"$/],
    [{ ...withDb, EVENTS_RETENTION: '1500ms' }, /^EVENTS_RETENTION counts whole seconds, got "1500ms"$/],
    [{ ...withDb, SHUTDOWN_DELAY: '-1s' }, /^SHUTDOWN_DELAY must be a duration: a whole number with a unit, ms, s, m, h or d \(250ms, 90s, 15m, 1h, 7d\), or plain seconds, got "-1s"$/],
    [{ ...withDb, MIGRATE: 'no' }, /^MIGRATE must be one of true, false, got "no"$/],
    [{ ...withDb, DB_POOLER: 'session' }, /^DB_POOLER must be one of none, transaction, got "session"$/],
    [{ DB_POOLER: 'transaction' }, /^DB_POOLER=transaction needs DB_HOST: the embedded PostgreSQL has no pooler in front$/],
    [{ DB_DIRECT_HOST: 'db' }, /^DB_DIRECT_HOST needs DB_HOST/],
    [{ DB_DIRECT_PORT: '5432' }, /^DB_DIRECT_PORT needs DB_HOST/],
    [{ ...withDb, DB_DIRECT_PORT: 'x' }, /^DB_DIRECT_PORT must be a whole number from 1 to 65535, got "x"$/],
    [{ ...withDb, METRICS_PORT: 'no' }, /^METRICS_PORT must be a port from 0 to 65535, or off, got "no"$/],
    [{ ...withDb, METRICS_PORT: '65536' }, /^METRICS_PORT must be a port from 0 to 65535, or off/],
    // A value of blanks was set on purpose, to no value: never silently the default.
    ...['PORT', 'HOST', 'WORKERS', 'LOG_LEVEL', 'DB_PORT', 'DB_NAME', 'DB_POOL_MAX', 'DB_POOLER', 'DB_DIRECT_HOST', 'DB_DIRECT_PORT', 'JWT_TTL', 'METRICS_HOST', 'METRICS_PORT', 'HANDLER_TIMEOUT', 'DATA_DIR', 'ADMIN_EMAIL', 'REGISTER_ROLES'].map(name =>
      [{ ...withDb, [name]: ' ' }, new RegExp(`^${name} is blank: give it a value, or leave it unset for the default$`)] as [Record<string, string>, RegExp]),
    [{ DB_HOST: '  ', JWT_SECRET: SECRET }, /^DB_HOST is blank/],
    [{ DB_HOST: 'db', JWT_SECRET: ' '.repeat(40) }, /^JWT_SECRET is blank/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), { name: 'ConfigError', message }, JSON.stringify(env))
  }
})

t.test('IDEMPOTENCY_TTL takes a duration, REQUIRE_IF_MATCH true or false', async t => {
  const config = loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, IDEMPOTENCY_TTL: '7d', REQUIRE_IF_MATCH: 'true' })
  t.equal(config.idempotencyTtlSeconds, 7 * 86_400)
  t.equal(config.requireIfMatch, true)
})

t.test('IMPORT_MAX_BYTES takes a number of bytes, IMPORT_TIMEOUT and EXPORT_TIMEOUT a duration', async t => {
  t.same(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, IMPORT_MAX_BYTES: '1048576', IMPORT_TIMEOUT: '1h' }).imports, { maxBytes: 1_048_576, timeoutMs: 3_600_000 })
  t.throws(() => loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, IMPORT_MAX_BYTES: '100' }), { name: 'ConfigError', message: /^IMPORT_MAX_BYTES must be a whole number from 1024/ })
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, BULK_CONCURRENCY: '5' }).bulkConcurrency, 5)
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, EXPORT_TIMEOUT: '30m' }).exportTimeoutMs, 1_800_000)
})

t.test('EVENTS_RETENTION and EVENTS_HEARTBEAT take durations, CHANGE_OUTBOX on or off', async t => {
  const config = loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, EVENTS_RETENTION: '7d', EVENTS_HEARTBEAT: '30s', REQUEST_TIMEOUT: '60s', CHANGE_OUTBOX: 'off' })
  t.same(config.outbox, { enabled: false, retentionSeconds: 7 * 86_400, heartbeatSeconds: 30 })
})

t.test('AUDIT_RETENTION takes a duration, AUDIT_LOG on or off', async t => {
  const config = loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, AUDIT_RETENTION: '90d', AUDIT_LOG: 'off' })
  t.same(config.audit, { enabled: false, retentionSeconds: 90 * 86_400 })
})

t.test('RATE_LIMIT takes <count>/<duration>, RATE_QUOTA <count>/1d, each off for none', async t => {
  t.same(loadConfig({ RATE_LIMIT: '600/1m', RATE_QUOTA: '10000/1d' }).rateLimits, { rate: { count: 600, windowSeconds: 60 }, quota: 10_000 })
  t.same(loadConfig({ RATE_LIMIT: '20/10', RATE_QUOTA: '5/24h' }).rateLimits, { rate: { count: 20, windowSeconds: 10 }, quota: 5 }, 'plain seconds; a day in hours')
  t.same(loadConfig({ RATE_LIMIT: 'off', RATE_QUOTA: 'off' }).rateLimits, { rate: null, quota: null })
  const refusals: Array<[Record<string, string>, RegExp]> = [
    [{ RATE_LIMIT: '600' }, /^RATE_LIMIT must be <count>\/<duration> \(600\/1m, 20\/10s\), or off, got "600"$/],
    [{ RATE_LIMIT: '600/1m/2' }, /must be <count>\/<duration>/],
    [{ RATE_LIMIT: 'x/1m' }, /must be <count>\/<duration>/],
    [{ RATE_LIMIT: '600/soon' }, /must be <count>\/<duration>/],
    [{ RATE_LIMIT: '0/1m' }, /^RATE_LIMIT must count from 1 to 1000000000, got "0\/1m"$/],
    [{ RATE_LIMIT: '1000000001/1m' }, /must count from 1 to 1000000000/],
    [{ RATE_LIMIT: '10/1500ms' }, /^RATE_LIMIT must have a window of whole seconds, from 1s to 1d/],
    [{ RATE_LIMIT: '10/500ms' }, /window of whole seconds/],
    [{ RATE_LIMIT: '10/2d' }, /window of whole seconds/],
    [{ RATE_QUOTA: '100/1h' }, /^RATE_QUOTA must be <count>\/1d \(10000\/1d\), or off, got "100\/1h"$/],
    [{ RATE_QUOTA: 'lots' }, /^RATE_QUOTA must be <count>\/<duration>/]
  ]
  for (const [env, message] of refusals) t.throws(() => loadConfig(env), { name: 'ConfigError', message }, JSON.stringify(env))
})

t.test('METRICS_HOST and METRICS_PORT place the metrics listener; METRICS_PORT=off turns it off', async t => {
  t.same(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, METRICS_HOST: '0.0.0.0', METRICS_PORT: '9100' }).metrics, { host: '0.0.0.0', port: 9100 })
  t.same(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, METRICS_PORT: '0' }).metrics, { host: '127.0.0.1', port: 0 }, '0: any free port')
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, METRICS_PORT: 'off' }).metrics, null)
})

t.test('traces: on when a collector is named or OTEL_TRACES_EXPORTER=otlp, off otherwise', async t => {
  const env = { DB_HOST: 'db', JWT_SECRET: SECRET }
  t.equal(loadConfig(env).tracing, null, 'off without a collector')
  t.same(loadConfig({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }).tracing,
    { endpoint: 'http://collector:4318/v1/traces', serviceName: 'student-records-api' }, 'the traces path added to OTEL_EXPORTER_OTLP_ENDPOINT')
  t.same(loadConfig({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://traces.internal/ingest', OTEL_SERVICE_NAME: 'records-eu' }).tracing,
    { endpoint: 'https://traces.internal/ingest', serviceName: 'records-eu' }, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT taken whole')
  t.same(loadConfig({ ...env, OTEL_TRACES_EXPORTER: 'otlp' }).tracing,
    { endpoint: 'http://localhost:4318/v1/traces', serviceName: 'student-records-api' }, 'otlp alone: the default collector')
  t.equal(loadConfig({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).tracing, null, 'none turns them off')
  const refused = {
    'OTEL_TRACES_EXPORTER must be one of otlp, none, got "jaeger"': { OTEL_TRACES_EXPORTER: 'jaeger' },
    'OTEL_EXPORTER_OTLP_ENDPOINT must be an http or https URL, got "collector:4318"': { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' },
    'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http or https URL, got "not a url"': { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }
  }
  for (const [message, change] of Object.entries(refused)) {
    t.throws(() => loadConfig({ ...env, ...change }), { name: 'ConfigError', message }, JSON.stringify(change))
  }
})

t.test('an empty value is unset: the default applies', async t => {
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, PORT: '', LOG_LEVEL: '' }).port, 3000)
})

t.test('the address start-up logs: localhost for every interface, brackets for IPv6', async t => {
  t.equal(listeningOrigin('0.0.0.0', 3000), 'http://localhost:3000')
  t.equal(listeningOrigin('::', 3000), 'http://localhost:3000')
  t.equal(listeningOrigin('::1', 8080), 'http://[::1]:8080')
  t.equal(listeningOrigin('127.0.0.1', 80), 'http://127.0.0.1:80')
})

t.test('a relative DATA_DIR is taken from the folder given', async t => {
  t.equal(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, DATA_DIR: 'data' }, '/srv/app').dataDir, '/srv/app/data')
})

t.test('SMTP_URL turns mail on, from MAIL_FROM, its links from PUBLIC_URL', async t => {
  t.same(loadConfig({ SMTP_URL: 'smtp://mail.example.com:587', PORT: '8080' }).mail,
    { smtpUrl: 'smtp://mail.example.com:587', from: 'Student Records <no-reply@localhost>', publicUrl: 'http://localhost:8080' })
  t.same(loadConfig({ SMTP_URL: 'smtps://u:p@mail.example.com', MAIL_FROM: 'Records <r@example.com>', PUBLIC_URL: 'https://records.example.com/app/' }).mail,
    { smtpUrl: 'smtps://u:p@mail.example.com', from: 'Records <r@example.com>', publicUrl: 'https://records.example.com/app' }, 'a trailing / left out')
  t.equal(loadConfig({ PUBLIC_URL: 'https://records.example.com' }).mail, null, 'no SMTP_URL: no mail')
  t.throws(() => loadConfig({ SMTP_URL: 'http://mail.example.com' }), { name: 'ConfigError', message: /^SMTP_URL must be an smtp:\/\/ or smtps:\/\/ URL/ })
  t.throws(() => loadConfig({ PUBLIC_URL: 'records.example.com' }), { name: 'ConfigError', message: /^PUBLIC_URL must be an http or https URL/ }, 'checked with mail off too')
  const secret = t.throws(() => loadConfig({ SMTP_URL: 'ftp://user:s3cret@mail.example.com' })) as Error
  t.notMatch(secret.message, /s3cret/, 'SMTP_URL, which may hold a password, not echoed')
  for (const url of ['https://records.example.com/?tenant=1', 'https://records.example.com/#/app', 'https://user:pw@records.example.com']) {
    t.throws(() => loadConfig({ PUBLIC_URL: url }), { name: 'ConfigError', message: /^PUBLIC_URL must have no query, fragment or credentials/ }, url)
  }
  for (const from of ['no-reply', 'Records <no-reply>', 'a@b.c, d@e.f', 'Records <a@b.c>\r\nBcc: x@y.z', 'Records a@b.c']) {
    t.throws(() => loadConfig({ MAIL_FROM: from }), { name: 'ConfigError', message: /^MAIL_FROM must be an address/ }, JSON.stringify(from))
  }
  t.equal(loadConfig({ SMTP_URL: 'smtp://mail.example.com', MAIL_FROM: 'records@example.com' }).mail?.from, 'records@example.com', 'an address alone')
})

t.test('passkeys serve the site of PUBLIC_URL unless told another, and its subdomains\' pages', async t => {
  const { passkeys } = loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, WEBAUTHN_RP_ID: 'Example.com', WEBAUTHN_ORIGINS: 'https://example.com, https://app.example.com:8443' }).auth
  t.same(passkeys, { rpId: 'example.com', origins: ['https://example.com', 'https://app.example.com:8443'] })
  t.same(loadConfig({ DB_HOST: 'db', JWT_SECRET: SECRET, PORT: '8080' }).auth.passkeys, { rpId: 'localhost', origins: ['http://localhost:8080'] })
})
