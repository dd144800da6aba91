import { BlockList, isIP, isIPv6 } from 'node:net'
import path from 'node:path'
import { ARGON2_OPTIONS, type Argon2Options } from '../auth/argon2-options.js'
import { parseQuota, parseRate, type Rate } from '../limits/rate-policy.js'
import { durationMs, MS_PER_UNIT, spoken } from './duration.js'

/** Everything the service reads from its environment, validated once at start-up. */
export interface Config {
  port: number
  host: string
  /** Server processes sharing the port (node:cluster); 1: this process serves alone. */
  workers: number
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** Where the embedded PostgreSQL keeps its data when no DB_HOST is given. */
  dataDir: string
  db: DatabaseConfig | null
  dbPoolMax: number
  /** 'transaction': DB_HOST is a transaction-mode pooler such as PgBouncer (lib/db/pooled-client.ts). */
  dbPooler: 'none' | 'transaction'
  /**
   * PostgreSQL itself, past the pooler, for what needs a session of its own: the listener of
   * auth changes and the migration's lock. Null: DB_HOST and DB_PORT.
   */
  dbDirect: { host: string, port: number } | null
  /** Start-up migrates the database to this release's schema; false: it only checks (npm run migrate does it). */
  migrate: boolean
  /** Origins allowed to call the API from a browser; empty: no CORS headers at all. */
  corsOrigins: string[]
  /**
   * The addresses and networks of the proxies in front (TRUST_PROXY): a request that comes
   * through them is taken to come from the right-most X-Forwarded-For address that is not one
   * of theirs. Empty: from the connection's own address, whatever the headers say.
   */
  trustProxy: string[]
  auth: AuthConfig
  timeouts: Timeouts
  /** How long a create's answer is kept for a repeat with its Idempotency-Key, in seconds. */
  idempotencyTtlSeconds: number
  /** Updates and deletes without If-Match are refused (428). */
  requireIfMatch: boolean
  imports: ImportsConfig
  /** An export's time limit, its COPY's from its start to its last row read by the client (EXPORT_TIMEOUT). */
  exportTimeoutMs: number
  /** Imports and exports that one instance runs at once (each holds a connection of the pool). */
  bulkConcurrency: number
  audit: AuditConfig
  outbox: OutboxConfig
  webhooks: WebhooksConfig
  /** What every caller may spend (RATE_LIMIT, RATE_QUOTA): per user for a token or key, per address for anonymous callers. */
  rateLimits: { rate: Rate | null, quota: number | null }
  /** Outgoing mail (SMTP_URL, MAIL_FROM, PUBLIC_URL): null without SMTP_URL, when the routes that send mail answer 503. */
  mail: MailConfig | null
  /** Where the Prometheus metrics are served, apart from the API; null: not at all (METRICS_PORT=off). */
  metrics: MetricsConfig | null
  /** OpenTelemetry traces sent over OTLP/HTTP; null: off, and the requests pay nothing for them. */
  tracing: TracingConfig | null
}

/** What the app is built with (app.ts), and what autoload hands each of its plugins. */
export interface AppOptions {
  config: Config
}

export interface MetricsConfig {
  host: string
  /** 0: any free port. */
  port: number
}

export interface TracingConfig {
  /** Where the spans are posted: the collector's OTLP/HTTP traces URL (`…/v1/traces`). */
  endpoint: string
  /** The `service.name` of every span. */
  serviceName: string
}

export interface OutboxConfig {
  /** Whether changes write outbox rows (CHANGE_OUTBOX=off is for measuring what the outbox costs). */
  enabled: boolean
  /** Rows older than this are swept, in seconds. */
  retentionSeconds: number
  /** How often an idle event stream sends a comment, in seconds, so that proxies keep it open. */
  heartbeatSeconds: number
}

export interface WebhooksConfig {
  /** Webhooks may reach loopback, private and link-local addresses (WEBHOOK_ALLOW_PRIVATE): for receivers on a private network, and tests. */
  allowPrivate: boolean
  /** How long an attempt waits for its whole answer, in milliseconds: a 2xx within it counts. */
  timeoutMs: number
  /** The wait after a delivery's first failed attempt, in milliseconds: doubled after each (lib/webhooks/backoff.ts). */
  firstRetryMs: number
  /** How long a delivery is retried after its event, in milliseconds; then it has failed. */
  retryForMs: number
  /** An endpoint whose every delivery has failed for this long is disabled, in milliseconds. */
  disableAfterMs: number
}

export interface AuditConfig {
  /** Whether changes write audit entries (AUDIT_LOG=off is for measuring what the log costs). */
  enabled: boolean
  /** Entries older than this are swept, in seconds. */
  retentionSeconds: number
}

/** Every limit in time, in milliseconds. */
export interface Timeouts {
  /** Receiving a whole request (socket level). */
  request: number
  /** From routing to the response being sent; past it, 503 with Retry-After. */
  handler: number
  /** An idle keep-alive connection is closed after this. */
  keepAlive: number
  /** After SIGTERM, serving on while /health/ready answers 503, for the balancer to stop sending. */
  shutdownDelay: number
  /** After that delay, for the requests in flight to finish. */
  shutdownGrace: number
  /** Opening a database connection. */
  dbConnect: number
  /** At start-up, trying again to connect while the database does not answer yet (0: not at all). */
  dbStartupWait: number
  /** Waiting for a free connection of the pool; past it, 503 with Retry-After. */
  dbAcquire: number
  /** One SQL statement (PostgreSQL's statement_timeout). */
  dbStatement: number
  /** A transaction left idle (PostgreSQL's idle_in_transaction_session_timeout). */
  dbIdleInTransaction: number
  /** Event-loop lag past which requests are shed with 503 (overload). */
  maxEventLoopDelay: number
  /** A request answered slower than this is logged, as a warning. */
  slowRequest: number
}

/** Imports of files (`POST /students/import`): their size and time, beyond the limits of other requests. */
export interface ImportsConfig {
  /** The largest file taken, in bytes (IMPORT_MAX_BYTES). */
  maxBytes: number
  /** From the request's start to its answer, the upload and the writes both (IMPORT_TIMEOUT). */
  timeoutMs: number
}

export interface PasskeyConfig {
  /** The site passkeys are made for: a host name. */
  rpId: string
  /** The pages' origins that may use them. */
  origins: string[]
}

export interface AuthConfig {
  /** HS256 key, at least 32 bytes. */
  jwtSecret: string
  jwtTtlSeconds: number
  /** How long a refresh token holds, unspent. */
  refreshTtlSeconds: number
  /** A session ends this long after its login at the latest, refreshed or not. */
  sessionMaxAgeSeconds: number
  /** A spent refresh token presented again this soon after its spending gets the same successors (two tabs); later, it ends its session. */
  refreshReuseGraceSeconds: number
  /** With adminPassword: start-up makes sure this user exists with role Admin. */
  adminEmail: string | undefined
  adminPassword: string | undefined
  /** Without ADMIN_EMAIL, on the embedded database: create admin@example.com when nobody holds Admin. */
  generateAdmin: boolean
  /** Roles a newly registered user gets. */
  registerRoles: string[]
  /** Login refused (403 `email_unverified`) until the user's address is verified; needs mail (SMTP_URL). */
  requireVerifiedEmail: boolean
  /** Roles whose holders need a second factor: without one, their tokens serve only its enrolment (MFA_REQUIRED_ROLES). */
  mfaRequiredRoles: string[]
  /** Where passkeys work (WEBAUTHN_RP_ID, WEBAUTHN_ORIGINS). */
  passkeys: PasskeyConfig
  /** The name an authenticator app shows beside the account (TOTP_ISSUER), and a passkey's site name. */
  totpIssuer: string
  /** Token checks remembered per instance (0: every request asks the database). */
  cacheSize: number
  /**
   * The cost of the password hashes stored: ARGON2_OPTIONS, the OWASP minimum. No variable sets
   * it; the tests lower it (test/helper.ts, TEST_HASHING).
   */
  passwordHashing: Argon2Options
  /** Login and register attempts per client IP and per e-mail address, and 404s per client IP, per window. */
  rateLimit: { perIp: number, perEmail: number, notFoundPerIp: number, windowSeconds: number }
}

export interface DatabaseConfig {
  host: string
  port: number
  database: string
  user: string
  password: string
}

/**
 * The configuration as read from the environment, before start-up: on the embedded database
 * without JWT_SECRET, `auth.jwtSecret` is null until start-up takes the one kept in DATA_DIR
 * (withJwtSecret, lib/process/jwt-secret.ts). Reading it writes nothing.
 */
export type LoadedConfig = Omit<Config, 'auth'> & { auth: Omit<AuthConfig, 'jwtSecret'> & { jwtSecret: string | null } }

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

/**
 * A variable's value, trimmed; undefined when it is unset or empty (`PORT=` in an env file).
 * A value of blanks only (`PORT=' '`) was set on purpose to something that is not a value: an error.
 */
function read (env: Env, name: string): string | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const value = raw.trim()
  if (value === '') throw new ConfigError(`${name} is blank: give it a value, or leave it unset for the default`)
  return value
}

function text (env: Env, name: string, fallback: string): string {
  return read(env, name) ?? fallback
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = read(env, name)
  if (raw === undefined) return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`)
  }
  return Number(raw)
}

function oneOf<T extends string> (env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = text(env, name, fallback)
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

/** A duration in milliseconds, from `min` to `max`. */
function duration (env: Env, name: string, fallbackMs: number, min: number, max: number): number {
  const raw = read(env, name)
  if (raw === undefined) return fallbackMs
  const ms = durationMs(raw)
  if (ms === undefined) {
    throw new ConfigError(`${name} must be a duration: a whole number with a unit, ms, s, m, h or d (250ms, 90s, 15m, 1h, 7d), or plain seconds, got "${raw}"`)
  }
  if (ms < min || ms > max) throw new ConfigError(`${name} must be from ${spoken(min)} to ${spoken(max)}, got "${raw}"`)
  return ms
}

/** Node's timers and PostgreSQL's timeouts hold at most 2^31 - 1 ms: 24 days and a bit. */
const LONGEST_TIME_LIMIT = 24 * MS_PER_UNIT.d

/** A time limit, in milliseconds: from 1 ms (0 too, if `zero`) to 24 days. */
function milliseconds (env: Env, name: string, fallback: number, { zero = false } = {}): number {
  return duration(env, name, fallback, zero ? 0 : 1, LONGEST_TIME_LIMIT)
}

/**
 * A lifetime, window or retention, in whole seconds: at least 1 s (token expiries count whole
 * seconds), at most a hundred years. A part of a second is refused rather than rounded.
 */
function seconds (env: Env, name: string, fallback: number): number {
  const ms = duration(env, name, fallback * 1_000, 1_000, 36_500 * MS_PER_UNIT.d)
  if (ms % 1_000 !== 0) throw new ConfigError(`${name} counts whole seconds, got "${read(env, name)}"`)
  return ms / 1_000
}

/** EVENTS_HEARTBEAT: shorter than REQUEST_TIMEOUT, after which an idle connection is closed. */
function heartbeatSeconds (env: Env): number {
  const heartbeat = seconds(env, 'EVENTS_HEARTBEAT', 15)
  const idle = milliseconds(env, 'REQUEST_TIMEOUT', 30_000)
  if (heartbeat * 1_000 >= idle) throw new ConfigError(`EVENTS_HEARTBEAT must be shorter than REQUEST_TIMEOUT (${idle} ms), after which an idle stream's connection is closed, got "${read(env, 'EVENTS_HEARTBEAT')}"`)
  return heartbeat
}

/**
 * JWT_SECRET, which must be at least 32 bytes; null when none is given on the embedded
 * database, where start-up keeps one in the data folder (lib/process/jwt-secret.ts).
 */
function jwtSecret (env: Env, embedded: boolean): string | null {
  const secret = env.JWT_SECRET
  if (secret !== undefined && secret !== '') {
    read(env, 'JWT_SECRET')
    if (Buffer.byteLength(secret) < 32) throw new ConfigError(`JWT_SECRET must be at least 32 bytes, got ${Buffer.byteLength(secret)}`)
    return secret
  }
  if (!embedded) throw new ConfigError('JWT_SECRET is required with DB_HOST: a random string of at least 32 bytes')
  return null
}

/** A comma-separated list of origins (`https://app.example.com`), or `*` for any. */
function origins (env: Env, name: string): string[] {
  const list = text(env, name, '').split(',').map(origin => origin.trim()).filter(Boolean)
  for (const origin of list) {
    if (origin !== '*' && !/^https?:\/\/[^/\s]+$/.test(origin)) {
      throw new ConfigError(`${name} must be * or a comma-separated list of origins such as https://app.example.com, got "${origin}"`)
    }
  }
  return list
}

/**
 * How much of the address space an entry of TRUST_PROXY trusts, as a prefix length: an IPv4
 * one for a network of IPv4-mapped IPv6 addresses (`::ffff:0:0/96` trusts every IPv4 client on
 * a dual-stack listener, as `0.0.0.0/0` would). Null: not what the proxy-addr package behind
 * Fastify's trustProxy takes, an IPv4 or IPv6 address, alone or with a prefix length.
 */
function trustedWidth (entry: string): number | null {
  const [address = '', prefix, extra] = entry.split('/')
  const version = isIP(address)
  const most = version === 4 ? 32 : 128
  if (version === 0 || extra !== undefined || (prefix !== undefined && !/^\d{1,3}$/.test(prefix))) return null
  const length = prefix === undefined ? most : Number(prefix)
  if (length > most) return null
  if (version === 4) return length
  const network = new BlockList()
  network.addSubnet(address, length, 'ipv6')
  return network.check(IPV4_MAPPED, 'ipv6') || IPV4_MAPPED_NETWORK.check(address, 'ipv6') ? length - 96 : length
}

const IPV4_MAPPED = '::ffff:0:0'
const IPV4_MAPPED_NETWORK = new BlockList()
IPV4_MAPPED_NETWORK.addSubnet(IPV4_MAPPED, 96, 'ipv6')

/** Networks wider than this trust more than a deployment's proxies can be. */
const WIDEST_TRUSTED = 8

/**
 * TRUST_PROXY: the proxies' addresses or networks, comma-separated. Nothing that trusts any
 * sender, as a client that reaches the service around its proxies could then choose its own
 * address: not `true`, not a hop count (Fastify itself no longer honours one), no network wider
 * than a /8 (`0.0.0.0/1`, `::/0`, `::ffff:0:0/96`).
 */
function trustedProxies (env: Env): string[] {
  const raw = read(env, 'TRUST_PROXY')
  if (raw === undefined) return []
  return raw.split(',').map(entry => entry.trim()).map(entry => {
    const width = trustedWidth(entry)
    if (/^(true|\*|\d+)$/.test(entry) || (width !== null && width < WIDEST_TRUSTED)) {
      throw new ConfigError(`TRUST_PROXY must name the proxies, not trust every sender ("${entry}"; networks of a /8 at the widest): a client that reaches the service around them could choose its own address`)
    }
    if (width === null) {
      throw new ConfigError(`TRUST_PROXY must be a comma-separated list of the proxies' IP addresses or networks (10.0.0.5, 10.0.0.0/8, fd00::/8), got "${entry}"`)
    }
    return entry
  })
}

/** RATE_LIMIT's or RATE_QUOTA's value, as `parse` reads it; off when unset. */
function policyPart<T> (env: Env, name: string, parse: (text: string) => T | null | string): T | null {
  const raw = read(env, name) ?? 'off'
  const part = parse(raw)
  if (typeof part === 'string') throw new ConfigError(`${name} ${part}, got "${raw}"`)
  return part
}

function flag (env: Env, name: string, fallback: boolean): boolean {
  return oneOf(env, name, String(fallback) as 'true' | 'false', ['true', 'false']) === 'true'
}

function optional (env: Env, name: string): string | undefined {
  return read(env, name)
}

/** The address a browser or client reaches the service at, for the log: `http://localhost:3000`. */
export function listeningOrigin (host: string, port: number): string {
  const name = ['0.0.0.0', '::'].includes(host) ? 'localhost' : isIPv6(host) ? `[${host}]` : host
  return `http://${name}:${port}`
}

/** DB_DIRECT_HOST and DB_DIRECT_PORT, either defaulting to DB_HOST's; null when neither is set. */
function directServer (env: Env): Config['dbDirect'] {
  const host = read(env, 'DB_DIRECT_HOST')
  const port = read(env, 'DB_DIRECT_PORT')
  if (host === undefined && port === undefined) return null
  if (read(env, 'DB_HOST') === undefined) throw new ConfigError(`${host === undefined ? 'DB_DIRECT_PORT' : 'DB_DIRECT_HOST'} needs DB_HOST: the embedded PostgreSQL has no pooler in front`)
  return { host: host ?? read(env, 'DB_HOST')!, port: integer(env, port === undefined ? 'DB_PORT' : 'DB_DIRECT_PORT', 5432, 1, 65535) }
}

/** METRICS_HOST and METRICS_PORT; null when METRICS_PORT is `off`. */
function metricsListener (env: Env): MetricsConfig | null {
  const port = read(env, 'METRICS_PORT')
  if (port === 'off') return null
  if (port !== undefined && !(/^\d+$/.test(port) && Number(port) <= 65535)) {
    throw new ConfigError(`METRICS_PORT must be a port from 0 to 65535, or off, got "${port}"`)
  }
  return { host: text(env, 'METRICS_HOST', '127.0.0.1'), port: port === undefined ? 9464 : Number(port) }
}

/** The collector's default OTLP/HTTP address, as OpenTelemetry's SDKs have it. */
const OTLP_DEFAULT_ENDPOINT = 'http://localhost:4318'

/**
 * Traces, from the variables OpenTelemetry's SDKs read: on when a collector is named
 * (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, whole, or OTEL_EXPORTER_OTLP_ENDPOINT, the traces path
 * added) or OTEL_TRACES_EXPORTER=otlp asks for the default collector; off otherwise, or with
 * OTEL_TRACES_EXPORTER=none. Unlike the SDKs, no collector named means off: the service
 * does not send spans to a port where nobody may listen.
 */
function tracing (env: Env): TracingConfig | null {
  const tracesEndpoint = read(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const endpoint = read(env, 'OTEL_EXPORTER_OTLP_ENDPOINT')
  const named = tracesEndpoint !== undefined || endpoint !== undefined
  if (oneOf(env, 'OTEL_TRACES_EXPORTER', named ? 'otlp' : 'none', ['otlp', 'none']) === 'none') return null
  const url = tracesEndpoint ?? `${(endpoint ?? OTLP_DEFAULT_ENDPOINT).replace(/\/+$/, '')}/v1/traces`
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new ConfigError(`${tracesEndpoint === undefined ? 'OTEL_EXPORTER_OTLP_ENDPOINT' : 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT'} must be an http or https URL, got "${tracesEndpoint ?? endpoint}"`)
  }
  return { endpoint: url, serviceName: text(env, 'OTEL_SERVICE_NAME', 'student-records-api') }
}

export interface MailConfig {
  /** `smtp://` or `smtps://`, with user and password if the server asks for them. */
  smtpUrl: string
  /** The sender of every mail: `Student Records <no-reply@example.com>`. */
  from: string
  /** Where the service's users reach it (a front end that serves the links of the mails): the links begin with it. */
  publicUrl: string
}

/** A mail's sender as MAIL_FROM takes it: `name <address>` or an address, on one line, no `"` to quote. */
const MAILBOX = /^(?:[^<>"\r\n]*<[^<>\s@]+@[^<>\s@]+>|[^<>\s@]+@[^<>\s@]+)$/

/** PUBLIC_URL: where users reach the front end: the mails' links point there, and passkeys are made for it. */
function publicUrl (env: Env, port: number): string {
  const url = text(env, 'PUBLIC_URL', `http://localhost:${port}`).replace(/\/+$/, '')
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) throw new ConfigError(`PUBLIC_URL must be an http or https URL, got "${url}"`)
  // The links append their own path and query: a query, a fragment or credentials would break them.
  const { search, hash, username, password } = new URL(url)
  if (search !== '' || hash !== '' || username !== '' || password !== '') throw new ConfigError(`PUBLIC_URL must have no query, fragment or credentials: the links add their own, got "${url}"`)
  return url
}

/**
 * Passkeys (WebAuthn): the site they are made for (WEBAUTHN_RP_ID, by default PUBLIC_URL's host
 * name) and the pages that may use them (WEBAUTHN_ORIGINS, by default PUBLIC_URL's origin), each
 * on that site: a browser refuses a passkey to any other.
 */
function passkeys (env: Env, port: number): PasskeyConfig {
  const site = new URL(publicUrl(env, port))
  const rpId = text(env, 'WEBAUTHN_RP_ID', site.hostname).toLowerCase()
  const origins = text(env, 'WEBAUTHN_ORIGINS', site.origin).split(',').map(origin => origin.trim()).filter(Boolean)
  for (const origin of origins) {
    const parsed = URL.canParse(origin) ? new URL(origin) : undefined
    if (parsed === undefined || parsed.origin !== origin || (parsed.hostname !== rpId && !parsed.hostname.endsWith(`.${rpId}`))) {
      throw new ConfigError(`WEBAUTHN_ORIGINS must be origins (scheme://host[:port]) on the site WEBAUTHN_RP_ID names (${rpId}), got "${origin}"`)
    }
  }
  return { rpId, origins }
}

/** Outgoing mail: on with SMTP_URL; PUBLIC_URL is where the links of the mails point. */
function mail (env: Env, port: number): MailConfig | null {
  // All three read, and checked, whether mail is on or not: a mistake shows at the first start.
  const smtpUrl = optional(env, 'SMTP_URL')
  // Not echoed: it may hold the server's password.
  if (smtpUrl !== undefined && (!URL.canParse(smtpUrl) || !/^smtps?:$/.test(new URL(smtpUrl).protocol))) throw new ConfigError('SMTP_URL must be an smtp:// or smtps:// URL (smtp://user:password@host:587)')
  const from = text(env, 'MAIL_FROM', 'Student Records <no-reply@localhost>')
  if (!MAILBOX.test(from)) throw new ConfigError(`MAIL_FROM must be an address, alone or after a name in <>: "Student Records <no-reply@example.com>", got "${from}"`)
  return smtpUrl === undefined ? null : { smtpUrl, from, publicUrl: publicUrl(env, port) }
}

/** TOTP_ISSUER: shown in authenticator apps, and part of the `otpauth://` URI's label, where a colon would split it. */
function totpIssuer (env: Env): string {
  const issuer = text(env, 'TOTP_ISSUER', 'Student Records').trim()
  if (issuer === '' || issuer.length > 64 || issuer.includes(':')) throw new ConfigError(`TOTP_ISSUER must be 1 to 64 characters without a colon, got "${issuer}"`)
  return issuer
}

/** REQUIRE_VERIFIED_EMAIL: only with mail on, without which no address could ever be verified. */
function requireVerifiedEmail (env: Env): boolean {
  const required = flag(env, 'REQUIRE_VERIFIED_EMAIL', false)
  if (required && optional(env, 'SMTP_URL') === undefined) throw new ConfigError('REQUIRE_VERIFIED_EMAIL=true needs SMTP_URL: without mail no address can be verified')
  return required
}

/**
 * Reads and validates the configuration; throws a ConfigError naming the bad variable. A
 * relative DATA_DIR is taken from `folder` (where `npm start` runs the service: the package's).
 * Nothing is written: the embedded database's JWT secret is start-up's (withJwtSecret).
 */
export function loadConfig (env: Env = process.env, folder = process.cwd()): LoadedConfig {
  const dbHost = read(env, 'DB_HOST')
  const dataDir = path.resolve(folder, text(env, 'DATA_DIR', '.data'))
  const adminEmail = optional(env, 'ADMIN_EMAIL')
  const adminPassword = env.ADMIN_PASSWORD === '' ? undefined : env.ADMIN_PASSWORD
  if (adminPassword !== undefined) read(env, 'ADMIN_PASSWORD')
  if ((adminEmail === undefined) !== (adminPassword === undefined)) {
    throw new ConfigError(`${adminEmail === undefined ? 'ADMIN_EMAIL' : 'ADMIN_PASSWORD'} must be set with ${adminEmail === undefined ? 'ADMIN_PASSWORD' : 'ADMIN_EMAIL'}`)
  }
  if (!dbHost && read(env, 'DB_POOLER') === 'transaction') {
    throw new ConfigError('DB_POOLER=transaction needs DB_HOST: the embedded PostgreSQL has no pooler in front')
  }
  if (adminPassword !== undefined && (adminPassword.length < 8 || adminPassword.length > 128)) {
    throw new ConfigError('ADMIN_PASSWORD must be 8 to 128 characters long')
  }
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: text(env, 'HOST', 'localhost'),
    workers: integer(env, 'WORKERS', 1, 1, 256),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    dataDir,
    db: dbHost
      ? {
          host: dbHost,
          port: integer(env, 'DB_PORT', 5432, 1, 65535),
          database: text(env, 'DB_NAME', 'postgres'),
          user: text(env, 'DB_USER', 'postgres'),
          password: env.DB_PASSWORD ?? ''
        }
      : null,
    dbPoolMax: integer(env, 'DB_POOL_MAX', 10, 1, 1000),
    dbPooler: oneOf(env, 'DB_POOLER', 'none', ['none', 'transaction']),
    dbDirect: directServer(env),
    migrate: flag(env, 'MIGRATE', true),
    corsOrigins: origins(env, 'CORS_ORIGIN'),
    trustProxy: trustedProxies(env),
    auth: {
      jwtSecret: jwtSecret(env, !dbHost),
      jwtTtlSeconds: seconds(env, 'JWT_TTL', 3600),
      refreshTtlSeconds: seconds(env, 'REFRESH_TTL', 30 * 86_400),
      sessionMaxAgeSeconds: seconds(env, 'SESSION_MAX_AGE', 90 * 86_400),
      refreshReuseGraceSeconds: seconds(env, 'REFRESH_REUSE_GRACE', 10),
      adminEmail,
      adminPassword,
      generateAdmin: !dbHost && adminEmail === undefined,
      registerRoles: text(env, 'REGISTER_ROLES', '').split(',').map(role => role.trim()).filter(Boolean),
      requireVerifiedEmail: requireVerifiedEmail(env),
      mfaRequiredRoles: text(env, 'MFA_REQUIRED_ROLES', '').split(',').map(role => role.trim()).filter(Boolean),
      passkeys: passkeys(env, integer(env, 'PORT', 3000, 0, 65535)),
      totpIssuer: totpIssuer(env),
      cacheSize: integer(env, 'AUTH_CACHE_SIZE', 10_000, 0, 10_000_000),
      // A copy: a test that changes its configuration in place changes no other's.
      passwordHashing: { ...ARGON2_OPTIONS },
      rateLimit: {
        perIp: integer(env, 'AUTH_RATE_LIMIT_IP', 30, 1, 1_000_000),
        perEmail: integer(env, 'AUTH_RATE_LIMIT_EMAIL', 10, 1, 1_000_000),
        notFoundPerIp: integer(env, 'NOT_FOUND_RATE_LIMIT_IP', 100, 1, 1_000_000),
        windowSeconds: seconds(env, 'AUTH_RATE_LIMIT_WINDOW', 60)
      }
    },
    timeouts: {
      request: milliseconds(env, 'REQUEST_TIMEOUT', 30_000),
      handler: milliseconds(env, 'HANDLER_TIMEOUT', 15_000),
      keepAlive: milliseconds(env, 'KEEP_ALIVE_TIMEOUT', 72_000),
      shutdownDelay: milliseconds(env, 'SHUTDOWN_DELAY', 0, { zero: true }),
      shutdownGrace: milliseconds(env, 'SHUTDOWN_GRACE', 10_000),
      dbConnect: milliseconds(env, 'DB_CONNECT_TIMEOUT', 2_000),
      dbStartupWait: milliseconds(env, 'DB_STARTUP_WAIT', 60_000, { zero: true }),
      dbAcquire: milliseconds(env, 'DB_ACQUIRE_TIMEOUT', 2_000),
      dbStatement: milliseconds(env, 'DB_STATEMENT_TIMEOUT', 10_000),
      dbIdleInTransaction: milliseconds(env, 'DB_IDLE_IN_TRANSACTION_TIMEOUT', 10_000),
      maxEventLoopDelay: milliseconds(env, 'MAX_EVENT_LOOP_DELAY', 1_000),
      slowRequest: milliseconds(env, 'SLOW_REQUEST', 1_000)
    },
    idempotencyTtlSeconds: seconds(env, 'IDEMPOTENCY_TTL', 86_400),
    requireIfMatch: flag(env, 'REQUIRE_IF_MATCH', false),
    imports: {
      maxBytes: integer(env, 'IMPORT_MAX_BYTES', 100 * 1024 * 1024, 1024, 2 ** 40),
      timeoutMs: milliseconds(env, 'IMPORT_TIMEOUT', 10 * MS_PER_UNIT.m)
    },
    exportTimeoutMs: milliseconds(env, 'EXPORT_TIMEOUT', 10 * MS_PER_UNIT.m),
    bulkConcurrency: integer(env, 'BULK_CONCURRENCY', 2, 1, 1000),
    audit: {
      enabled: oneOf(env, 'AUDIT_LOG', 'on', ['on', 'off']) === 'on',
      retentionSeconds: seconds(env, 'AUDIT_RETENTION', 365 * 86_400)
    },
    outbox: {
      enabled: oneOf(env, 'CHANGE_OUTBOX', 'on', ['on', 'off']) === 'on',
      retentionSeconds: seconds(env, 'EVENTS_RETENTION', 30 * 86_400),
      heartbeatSeconds: heartbeatSeconds(env)
    },
    webhooks: {
      allowPrivate: flag(env, 'WEBHOOK_ALLOW_PRIVATE', false),
      timeoutMs: duration(env, 'WEBHOOK_TIMEOUT', 10_000, 1, 60_000),
      firstRetryMs: milliseconds(env, 'WEBHOOK_FIRST_RETRY', 5_000),
      retryForMs: milliseconds(env, 'WEBHOOK_RETRY_FOR', 3 * MS_PER_UNIT.d),
      disableAfterMs: milliseconds(env, 'WEBHOOK_DISABLE_AFTER', 5 * MS_PER_UNIT.d)
    },
    mail: mail(env, integer(env, 'PORT', 3000, 0, 65535)),
    rateLimits: {
      rate: policyPart(env, 'RATE_LIMIT', parseRate),
      quota: policyPart(env, 'RATE_QUOTA', parseQuota)
    },
    metrics: metricsListener(env),
    tracing: tracing(env)
  }
}
