import cluster from 'node:cluster'
import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { AggregatorRegistry, Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { boundAddress, closeMetrics, serveMetrics } from '../../lib/process/metrics-server.js'
import { packageInfo } from '../../lib/process/package-info.js'
import { RequestDurations } from '../../lib/process/request-durations.js'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: Metrics
  }
  interface FastifyRequest {
    /** 1 while the request counts in flight (from the metrics' onRequest hook to its answer), else 0. */
    countedInFlight: number
  }
}

export interface Metrics {
  /** This app's own registry: several apps in one process (the tests) each count their own. */
  registry: Registry
  /** Attempts refused 429 by a rate limit, by the limit's scope (login, register, refresh, not-found). */
  rateLimitRejections: Counter<'scope'>
  /** Requests refused 429 by a caller's rate limit or daily quota, by the policy's name (never a caller's). */
  requestsLimited: Counter<'policy'>
  /** Creates answered again from an Idempotency-Key's kept answer. */
  idempotencyReplays: Counter
  /** Where the metrics listener is bound; null when this process has none (METRICS_PORT=off, or a worker: the primary serves). */
  address: AddressInfo | null
}

/** Seconds: from a cached GET (a millisecond) to HANDLER_TIMEOUT's 15 s. */
const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 30]
/** Seconds: an argon2id hash takes tens of milliseconds, more on a loaded machine. */
const HASH_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]
/** The route label of requests that matched no route, so that scanned URLs make no new series. */
const NO_ROUTE = 'no route'

/**
 * Prometheus metrics (docs/deployment.md, "Metrics"): requests by method, route template and
 * status; the database pool, the caller cache, the password hashing, rate-limit rejections,
 * idempotent replays; and prom-client's process metrics. Served on a listener of its own
 * (METRICS_HOST, METRICS_PORT), never on the API's port. METRICS_PORT=off: no hooks, no
 * process metrics, no listener. Under WORKERS, the primary serves the workers' metrics summed
 * (lib/process/primary.ts), and each worker answers it with this registry.
 */
export default fp(async (fastify) => {
  const registry = new Registry()
  const metrics: Metrics = {
    registry,
    rateLimitRejections: new Counter({ name: 'rate_limit_rejections_total', help: 'Attempts refused 429 by a rate limit, by its scope', labelNames: ['scope'], registers: [registry] }),
    requestsLimited: new Counter({ name: 'requests_limited_total', help: 'Requests refused 429 by the caller\'s rate limit or daily quota, by the policy\'s name', labelNames: ['policy'], registers: [registry] }),
    idempotencyReplays: new Counter({ name: 'idempotency_replays_total', help: 'Creates answered again from the answer kept for their Idempotency-Key', registers: [registry] }),
    address: null
  }
  fastify.decorate('metrics', metrics)
  fastify.decorateRequest('countedInFlight', 0)
  const listener = fastify.config.metrics
  if (listener === null) return

  collectDefaultMetrics({ register: registry })
  // Which release runs where, as Prometheus's `*_build_info` convention has it: a constant 1
  // whose labels are the facts. Under WORKERS the primary keeps one worker's value rather than
  // summing them, which would make it the number of workers.
  new Gauge({
    name: 'build_info',
    help: 'Always 1; its labels say which version of the service runs, on which Node.js',
    labelNames: ['version', 'node_version'],
    aggregator: 'first',
    registers: [registry]
  }).set({ version: packageInfo.version, node_version: process.version }, 1)

  const duration = new RequestDurations('http_request_duration_seconds', 'Time from receiving a request to sending its answer, by method, route template and status', DURATION_BUCKETS)
  registry.registerMetric(duration.asMetric())
  // A plain count on the hot path, which the gauge reads when scraped.
  let inFlight = 0
  registry.registerMetric(new Gauge({ name: 'http_requests_in_flight', help: 'Requests received and not yet answered', registers: [], collect () { this.set(inFlight) } }))
  fastify.addHook('onRequest', (request, _reply, done) => {
    inFlight++
    request.countedInFlight = 1
    done()
  })
  // Out of flight once, whichever comes: the answer, or the client going first (whose request
  // may never be answered, or answered too: Fastify promises neither). The hooks that may
  // answer a request themselves (CORS, load shedding) run after this one's (app.ts).
  function stopCountingInFlight (request: FastifyRequest): void {
    inFlight -= request.countedInFlight
    request.countedInFlight = 0
  }
  fastify.addHook('onResponse', (request, reply, done) => {
    stopCountingInFlight(request)
    duration.observe(request.method, request.routeOptions.url ?? NO_ROUTE, reply.statusCode, reply.elapsedTime / 1000)
    done()
  })
  fastify.addHook('onRequestAbort', (request, done) => {
    stopCountingInFlight(request)
    done()
  })

  // Live values, read when scraped rather than counted on every event (registered here, as a
  // bare `new` of one that registers itself would read as a mistake).
  const pool = fastify.pgPool
  const poolGauge = (name: string, help: string, read: () => number) => new Gauge({
    name,
    help,
    registers: [],
    collect () { this.set(read()) }
  })
  registry.registerMetric(poolGauge('db_pool_connections', 'Connections open in the database pool', () => pool.totalCount))
  registry.registerMetric(poolGauge('db_pool_connections_in_use', 'Connections of the database pool lent out to a query or transaction', () => pool.totalCount - pool.idleCount))
  registry.registerMetric(poolGauge('db_pool_waiting', 'Queries waiting for a free connection of the database pool', () => pool.waitingCount))

  const cache = fastify.callerCache
  // The cache counts for itself; a scrape adds what it counted since the last one.
  const countedByCache = (name: string, help: string, count: () => number) => {
    let seen = 0
    return new Counter({
      name,
      help,
      registers: [],
      collect () {
        const now = count()
        this.inc(now - seen)
        seen = now
      }
    })
  }
  registry.registerMetric(countedByCache('auth_cache_hits_total', 'Token and API key checks answered from the caller cache', () => cache.hits))
  registry.registerMetric(countedByCache('auth_cache_misses_total', 'Token and API key checks the caller cache could not answer (the database did)', () => cache.misses))
  registry.registerMetric(new Gauge({ name: 'auth_cache_size', help: 'Callers held by the caller cache', registers: [], collect () { this.set(cache.size) } }))

  const passwords = fastify.passwords
  registry.registerMetric(new Gauge({ name: 'password_hash_queue_depth', help: 'Password hashes and checks waiting for a hashing thread', registers: [], collect () { this.set(passwords.waiting) } }))
  const hashTime = new Histogram({
    name: 'password_hash_duration_seconds',
    help: 'Time an argon2id hash (operation="hash") or check ("verify") took on its thread',
    labelNames: ['operation'],
    buckets: HASH_BUCKETS,
    registers: [registry]
  })
  passwords.onTimed((operation, seconds) => hashTime.observe({ operation }, seconds))

  if (cluster.isWorker) {
    // The primary asks each worker for this registry's metrics and serves their sum. A worker
    // answers once an AggregatorRegistry has been made in it: that adds prom-client's listener.
    new AggregatorRegistry() // eslint-disable-line no-new
    AggregatorRegistry.setRegistries([registry])
    return
  }
  let server: Server | undefined
  fastify.addHook('onReady', async () => {
    server = await serveMetrics(listener, { contentType: registry.contentType, text: () => registry.metrics() },
      error => fastify.log.error({ err: error }, 'could not collect the metrics'))
    metrics.address = boundAddress(server)
  })
  fastify.addHook('onClose', async () => {
    if (server) await closeMetrics(server)
  })
}, { name: 'metrics', dependencies: ['config', 'knex', 'caller-cache', 'passwords', 'security-headers'] })
