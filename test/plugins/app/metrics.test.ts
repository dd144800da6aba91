import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import net, { type AddressInfo } from 'node:net'
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import app, { serverOptions } from '../../../app.js'
import { build, createDatabase, testConfig, within, type ConfigChange } from '../../helper.js'
import { scrape as scrapeUrl, series, value } from '../../prometheus.js'
import { bearer, userWithRoles } from '../../routes/api/accounts.js'
import { ada, student } from '../../routes/students/fixtures.js'

/** Metrics on, on any free port of 127.0.0.1. */
const metricsOn: ConfigChange = config => { config.metrics = { host: '127.0.0.1', port: 0 } }

function metricsUrl (app: FastifyInstance, path = '/metrics'): string {
  const { address, port } = app.metrics.address!
  return `http://${address}:${port}${path}`
}

const scrape = (t: Test, app: FastifyInstance) => scrapeUrl(t, metricsUrl(app))

const { version } = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string }

t.test('requests by method, route template and status; pools, limits, replays and the process', async t => {
  const app = await build(t, config => {
    metricsOn(config)
    config.auth.rateLimit.notFoundPerIp = 3
  })
  t.equal((await app.inject({ url: '/metrics' })).statusCode, 404, 'the public port has no metrics')
  const created = await app.inject({ method: 'POST', url: '/students', payload: ada })
  t.equal(created.statusCode, 201)
  const id = created.json().id as number
  t.equal((await app.inject({ url: `/students/${id}` })).statusCode, 200)
  t.equal((await app.inject({ url: `/students/${id + 1000}` })).statusCode, 404)
  t.equal((await app.inject({ url: '/students/not-a-number' })).statusCode, 400)
  const keyed = { method: 'POST' as const, url: '/students', headers: { 'idempotency-key': 'metrics-1' }, payload: student(7) }
  t.equal((await app.inject(keyed)).statusCode, 201)
  t.equal((await app.inject(keyed)).headers['idempotent-replayed'], 'true')
  for (const path of ['/no/such/route', '/wp-admin/x']) t.equal((await app.inject({ url: path })).statusCode, 404)
  t.equal((await app.inject({ url: '/.env' })).statusCode, 429, 'past the limit of unknown URLs')

  const scraped = await scrape(t, app)
  const { families } = scraped
  t.equal(families.get('http_request_duration_seconds')?.type, 'HISTOGRAM')
  const count = (labels: Record<string, string>) => value(scraped, 'http_request_duration_seconds_count', labels)
  t.equal(count({ method: 'GET', route: '/students/:id', status_code: '200' }), 1, 'labelled with the route template, not the URL')
  t.equal(count({ method: 'GET', route: '/students/:id', status_code: '404' }), 1)
  t.equal(count({ method: 'GET', route: '/students/:id', status_code: '400' }), 1)
  t.equal(count({ method: 'POST', route: '/students', status_code: '201' }), 3, 'the replay too')
  t.equal(count({ method: 'GET', route: 'no route', status_code: '404' }), 3, 'unknown URLs share one label, /metrics among them')
  t.equal(count({ method: 'GET', route: 'no route', status_code: '429' }), 1)
  const counts = series(scraped, 'http_request_duration_seconds_count')
  t.same(new Set(counts.map(sample => sample.labels?.route)), new Set(['/students', '/students/:id', 'no route']), 'no raw URL in a label')
  t.equal(counts.reduce((sum, sample) => sum + Number(sample.value), 0), 10, 'every request once, the scrape not')
  const labels = { method: 'GET', route: '/students/:id', status_code: '200' }
  t.equal(value(scraped, 'http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }), 1, 'buckets up to +Inf')
  t.ok(value(scraped, 'http_request_duration_seconds_sum', labels) > 0, 'a time')

  t.equal(value(scraped, 'http_requests_in_flight'), 0, 'nothing in flight between requests')
  for (const name of ['db_pool_connections', 'db_pool_connections_in_use', 'db_pool_waiting']) {
    t.equal(families.get(name)?.type, 'GAUGE', name)
    t.same(series(scraped, name).map(sample => sample.labels ?? {}), [{}], `${name}: one pool, knex's and the prepared queries'`)
  }
  t.ok(value(scraped, 'db_pool_connections') >= 1, 'the pool has opened a connection, kept open')
  // The writes' notification to the change feed's other instances goes 50 ms after them, on a
  // connection of the pool: it may be in flight at the first scrape.
  t.ok(await within(5_000, async () => value(await scrape(t, app), 'db_pool_connections_in_use') === 0), 'none in use between requests, once that is sent')
  t.equal(value(scraped, 'db_pool_waiting'), 0)
  t.equal(families.get('rate_limit_rejections_total')?.type, 'COUNTER')
  t.equal(value(scraped, 'rate_limit_rejections_total', { scope: 'not-found' }), 1, 'the 429')
  t.equal(value(scraped, 'idempotency_replays_total'), 1, 'the replay')
  t.equal(families.get('build_info')?.type, 'GAUGE')
  t.same(series(scraped, 'build_info').map(sample => [sample.labels, Number(sample.value)]),
    [[{ version, node_version: process.version }, 1]], 'the running version and Node.js, as labels of a constant 1')
  for (const name of ['process_cpu_user_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_gc_duration_seconds']) {
    t.ok(families.has(name), `prom-client's default ${name}`)
  }

  t.equal((await fetch(metricsUrl(app, '/other'))).status, 404, 'the listener serves /metrics only')
  t.equal((await fetch(metricsUrl(app), { method: 'POST' })).status, 404, 'to GET only')
  const head = await fetch(metricsUrl(app), { method: 'HEAD' })
  t.equal(head.status, 200, 'and HEAD')
  t.equal(await head.text(), '')
})

t.test('a request whose client goes before the answer is out of flight', async t => {
  const app = await build(t, metricsOn)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const inFlight = async () => value(await scrape(t, app), 'http_requests_in_flight')
  // Half a body: the request waits for the rest, in flight.
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write('POST /students HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"name":')
  t.ok(await within(5_000, async () => await inFlight() === 1), 'in flight while its body comes')
  socket.destroy()
  t.ok(await within(5_000, async () => await inFlight() === 0), 'out of flight once its client has gone')
  t.equal(await inFlight(), 0, 'once only')
})

t.test('the caller cache\'s hits, misses and size; the password hashing', async t => {
  const app = await build(t, metricsOn)
  const { token } = await userWithRoles(app, ['User'])
  const before = await scrape(t, app)
  for (let i = 0; i < 3; i++) t.equal((await app.inject({ url: '/api/profile', headers: bearer(token) })).statusCode, 200)
  const after = await scrape(t, app)
  const moved = (name: string) => value(after, name) - value(before, name)
  t.equal(moved('auth_cache_misses_total'), 1, 'the first check asks the database')
  t.equal(moved('auth_cache_hits_total'), 2, 'the others are answered from the cache')
  t.equal(value(after, 'auth_cache_size'), 1)
  t.equal(value(after, 'password_hash_queue_depth'), 0, 'no hash waiting')
  t.ok(value(after, 'password_hash_duration_seconds_count', { operation: 'hash' }) >= 1, 'the user\'s password hashed')
  t.equal(value(after, 'password_hash_duration_seconds_count', { operation: 'verify' }), 1, 'the login\'s check')
})

t.test('METRICS_PORT=off: no listener, no request metrics, the counters still there', async t => {
  const app = await build(t)
  t.equal(app.metrics.address, null)
  await app.inject({ url: '/students' })
  const text = await app.metrics.registry.metrics()
  t.notMatch(text, /http_request_duration_seconds|nodejs_heap_size_used_bytes/)
  t.match(text, /rate_limit_rejections_total/)
})

t.test('an app closed before it was ready had no listener to close', async t => {
  const config = testConfig(await createDatabase(t), metricsOn)
  const fastify = Fastify(serverOptions(config))
  await fastify.register(app, { config })
  await fastify.close()
  t.equal(fastify.metrics.address, null)
})
