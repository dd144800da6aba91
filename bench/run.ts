// npm run bench: the production server (dist/) against two bare ceilings (node:http with pg,
// and node:http with postgres.js) and an Express + pg peer, on one fresh database, over real HTTP on 127.0.0.1. Prints a table and
// writes latest.json and latest.svg to bench/results/local/ (git-ignored), or to BENCH_OUT:
// BENCH_OUT=bench/results replaces the committed ones. BENCH_DURATION, BENCH_REPEAT and
// BENCH_WARMUP (seconds, runs, seconds) shorten it; BENCH_ONLY (parts of a scenario's name, split by |,
// as `login`) measures the scenarios it names only.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { once } from 'node:events'
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import pg from 'pg'
import { barChart } from './chart.js'
import { benchFeed, type FeedFigures } from './feed.js'
import { benchImport, type ImportFigures } from './import.js'
import { pgbouncerInstalled, startPgBouncer, type PgBouncer } from '../test/setup/pgbouncer.js'
import { benchDatabase, freePort, start, stop, type Server } from './harness.js'
import { measure, median, pairedRatio, postmasterOf, withPeakRss, type Measured, type Request } from './load.js'

const SECONDS = Number(process.env.BENCH_DURATION ?? 10)
const REPEAT = Number(process.env.BENCH_REPEAT ?? 3)
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2)
const CONNECTIONS = 50
const OUT = path.resolve(process.env.BENCH_OUT ?? 'bench/results/local')
const STUDENTS = 10_000
const CLIENTS = 1_000
/** Students past STUDENTS, which only the conditional requests' scenarios read and write, their tags known. */
const TAGGED = 1_000
const MILLION = 1_000_000
/** The service answering student GETs by id in the authenticated GET's rounds, for the ratio between the two. */
const UNAUTHENTICATED = 'service, student GET by id, same rounds'
/** The second ceiling: node:http with postgres.js, for the student routes. */
const POSTGRES_JS = 'ceiling, postgres.js'
/** The service answering the authenticated GET with an API key, in the same rounds. */
const KEYED = 'service, API key'
/** The service writing no audit log and no change outbox, for what they cost a write. */
const UNAUDITED = 'service, audit log and change outbox off'
/** The service writing its audit log but no change outbox: what the change feed costs a write. */
const FEEDLESS = 'service, change outbox off'
/** The service with a rate limit and a daily quota no caller reaches: what their accounting costs. */
const LIMITED = 'service, rate limits on'
/** The service with rate limits on, answering an API key of a policy of its own (spent beside its owner's), in the same rounds. */
const LIMITED_KEY = 'service, rate limits on, a key of its own policy'
/** The service with no metrics (METRICS_PORT=off), for what the metrics cost a request. */
const UNMEASURED = 'service, metrics off'
/**
 * A second process of the service, and of the service with metrics off: two processes of one
 * build differ by a few per cent in their rates (where each lands, what its JIT makes), more
 * than the metrics cost, so their ratio is taken over two processes a side, and the first
 * two's ratio shows how far apart identical processes are.
 */
const SECOND = 'service, a second process'
const UNMEASURED_SECOND = 'service, metrics off, a second process'
/** The service sending traces (OTEL_EXPORTER_OTLP_ENDPOINT) to a receiver of the benchmark's. */
const TRACED = 'service, tracing on'
/** The service behind PgBouncer in transaction mode (DB_POOLER=transaction), where it is installed. */
const POOLED = 'service through PgBouncer'
/** The service answering the page of 100 to a client that accepts gzip (the other targets' clients send no Accept-Encoding). */
const GZIP_CLIENT = 'service, gzip client'
/** The service answering refreshes in the login's rounds. */
const REFRESH = 'service, token refresh, same rounds'
/** The service answering single student POSTs in the batches' rounds. */
const SINGLE_POSTS = 'service, single student POSTs, same rounds'
/** The rows of a batch in the batches' scenario. */
const BATCH_ROWS = 100
const chosen = (scenario: string) => (process.env.BENCH_ONLY ?? '').split('|').some(part => scenario.includes(part))

const { server, database, env, drop } = await benchDatabase()
const servers: Server[] = []
let pgbouncer: PgBouncer | undefined
try {
  console.error(`database ${database} ready; starting the servers`)
  const service = await start('service', ['dist/server.js'], env)
  servers.push(service)

  // Seed: 10,000 students and 1,000 clients, and a user holding the User role.
  const db = new pg.Client({ ...server, database })
  await db.connect()
  await db.query(`insert into students (name, email, age, dob)
    select 'Student ' || g, 'student' || g || '@example.com', 18 + g % 60, date '1990-01-01' + g % 9000
    from generate_series(1, ${STUDENTS + TAGGED}) g`)
  await db.query(`insert into clients (name, vat_number, street, city, post_code, email)
    select 'Client ' || g, lpad(g::text, 10, '0'), 'Street ' || g, 'City', '00-' || lpad((g % 1000)::text, 3, '0'), 'client' || g || '@example.com'
    from generate_series(1, ${CLIENTS}) g`)
  const password = 'a benchmark password'
  const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  await fetch(`${service.url}/api/register`, json({ name: 'Bench', email: 'bench@example.com', password, c_password: password }))
  await db.query('insert into user_roles (user_id, role_id) select u.id, r.id from users u, roles r where u.email = \'bench@example.com\' and r.name = \'User\'')
  const token = (await (await fetch(`${service.url}/api/login`, json({ email: 'bench@example.com', password }))).json() as { data: string }).data
  const auth = { authorization: `Bearer ${token}` }
  const { secret } = await (await fetch(`${service.url}/api/keys`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench', permissions: ['client-list'], current_password: password }) })).json() as { secret: string }
  const byKey = { authorization: `Bearer ${secret}` }
  const { secret: limitedSecret } = await (await fetch(`${service.url}/api/keys`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'bench, limited', permissions: ['client-list'], current_password: password, rate_limit: '1000000000/1m' }) })).json() as { secret: string }
  const byLimitedKey = { authorization: `Bearer ${limitedSecret}` }

  // Refresh tokens for the refresh scenario, each of a session of its own (refreshes count per
  // session), 50 sessions a user (a user has at most 100): token i is what refreshToken(i)
  // makes, and the database keeps its SHA-256 as the service does. Enough for 4,000 refreshes
  // a second throughout, whatever the durations.
  const refreshes = chosen('login') ? 4_000 * (WARMUP + SECONDS * REPEAT) : 0
  const refreshToken = (i: number) => createHash('sha256').update(`bench-refresh-${i}`).digest('base64url')
  await db.query(`with made as (
      select g, translate(rtrim(encode(sha256(('bench-refresh-' || g)::bytea), 'base64'), '='), '+/', '-_') as token
      from generate_series(1, ${refreshes}) g),
    people as (
      insert into users (name, email, email_key, password)
      select 'Refresh ' || k, 'refresh' || k || '@example.com', 'refresh' || k || '@example.com', 'no password'
      from generate_series(0, ${Math.ceil(refreshes / 50)}) k
      returning id, name),
    started as (
      insert into sessions (user_id, expires_at, user_agent)
      select p.id, now() + interval '1 day', 'bench ' || g from made join people p on p.name = 'Refresh ' || (g - 1) / 50
      returning id, user_agent)
    insert into refresh_tokens (hash, session_id, issued_at, expires_at)
    select sha256(made.token::bytea), started.id, now(), now() + interval '1 day'
    from made join started on started.user_agent = 'bench ' || made.g`)
  // Statistics of the tables as seeded, as autovacuum would have them for tables grown this
  // large in service: planned against the empty tables' instead, statements would not be
  // planned as in production.
  await db.query('analyze')
  let refreshed = 0
  const nextRefresh = (): Request => ({ method: 'POST', path: '/api/token/refresh', body: JSON.stringify({ refresh_token: refreshToken(++refreshed) }) })

  const quiet = await start('service, logging off', ['dist/server.js'], { ...env, LOG_LEVEL: 'silent' })
  servers.push(quiet)
  const workers = await start('service, 2 workers', ['dist/server.js'], { ...env, WORKERS: '2' })
  servers.push(workers)
  const unaudited = await start(UNAUDITED, ['dist/server.js'], { ...env, AUDIT_LOG: 'off', CHANGE_OUTBOX: 'off' })
  servers.push(unaudited)
  const feedless = await start(FEEDLESS, ['dist/server.js'], { ...env, CHANGE_OUTBOX: 'off' })
  servers.push(feedless)
  const unmeasured = await start(UNMEASURED, ['dist/server.js'], { ...env, METRICS_PORT: 'off' })
  servers.push(unmeasured)
  // The second processes, and the service with rate limits on, only with rounds of 10 s or
  // more: a target's pool closes its idle
  // connections 10 s after its load, and with shorter rounds every target of the GET by id
  // holds its own at once, more than PostgreSQL's default 100 connections with these two.
  const seconds: Server[] = []
  const limitedTargets: Array<Server | { server: Server, name: string, next: () => Request }> = []
  if (SECONDS >= 10) {
    const second = await start(SECOND, ['dist/server.js'], env)
    servers.push(second)
    seconds.push(second)
    const unmeasuredSecond = await start(UNMEASURED_SECOND, ['dist/server.js'], { ...env, METRICS_PORT: 'off' })
    servers.push(unmeasuredSecond)
    seconds.push(unmeasuredSecond)
    const limited = await start(LIMITED, ['dist/server.js'], { ...env, RATE_LIMIT: '1000000000/1m', RATE_QUOTA: '1000000000/1d' })
    servers.push(limited)
    limitedTargets.push(limited, { server: limited, name: LIMITED_KEY, next: () => ({ method: 'GET', path: `/api/clients/${randomId(CLIENTS)}`, headers: byLimitedKey }) })
  } else {
    console.error('rounds under 10 s: no second processes for metrics on ÷ off, no service with rate limits on')
  }
  // As many server connections as the service's pool has: what the pooler costs, not a smaller pool.
  const pooledTargets: Server[] = []
  if (pgbouncerInstalled) {
    pgbouncer = await startPgBouncer({ ...server, database }, await freePort(), 10)
    const pooled = await start(POOLED, ['dist/server.js'], {
      ...env, DB_HOST: '127.0.0.1', DB_PORT: String(pgbouncer.port), DB_POOLER: 'transaction', DB_DIRECT_HOST: server.host, DB_DIRECT_PORT: String(server.port)
    })
    servers.push(pooled)
    pooledTargets.push(pooled)
  } else {
    console.error('pgbouncer is not installed: no target through it')
  }
  const bareEnv = { ...env, DB_POOL_MAX: '10' }
  const receiver = await start('OTLP receiver', ['--import', 'tsx', 'bench/servers/otlp-receiver.ts'], bareEnv)
  const traced = await start(TRACED, ['dist/server.js'], { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url })
  // Stopped after the service, which sends its last spans as it stops.
  servers.push(traced, receiver)
  const ceiling = await start('ceiling', ['--import', 'tsx', 'bench/servers/ceiling.ts'], bareEnv)
  const postgresCeiling = await start(POSTGRES_JS, ['--import', 'tsx', 'bench/servers/ceiling-postgres.ts'], bareEnv)
  const peer = await start('peer', ['--import', 'tsx', 'bench/servers/peer.ts'], bareEnv)
  servers.push(ceiling, postgresCeiling, peer)

  let exported: ExportFigures | undefined
  let n = 0
  const randomId = (max: number) => 1 + Math.floor(Math.random() * max)
  const newStudent = () => JSON.stringify({ name: 'New Student', email: `new${++n}-${process.pid}@example.com`, age: 30, dob: '1995-05-05' })
  const newClient = () => JSON.stringify({ name: `Client ${++n}`, vat_number: '5252248481', street: 'ul. Prosta 1', city: 'Warszawa', post_code: '00-850', email: `office${n}@example.com` })
  // Seeded student n has id n and the address studentn@example.com, which a PUT keeps.
  const wholeStudent = (id: number) => JSON.stringify({ name: 'Renamed', email: `student${id}@example.com`, age: 40, dob: '1985-05-05' })
  const studentById = (): Request => ({ method: 'GET', path: `/students/${randomId(STUDENTS)}` })
  // The current tags of the students of the conditional requests' scenarios.
  const tags = new Map<number, string>()
  for (let id = STUDENTS + 1; id <= STUDENTS + TAGGED; id++) tags.set(id, (await fetch(`${service.url}/students/${id}`)).headers.get('etag')!)
  const taggedId = () => STUDENTS + randomId(TAGGED)
  // A target is a server loaded with the scenario's requests, or with requests of its own
  // under another name, measured in the same rounds as the others for a ratio between them.
  type Target = Server | { server: Server, name: string, next: () => Request }
  const scenarios: { name: string, targets: Target[], next: () => Request }[] = [
    // Logging off, metrics off, tracing on and two workers beside the others, in the same rounds, for the ratios between them.
    { name: 'student GET by id', targets: [service, quiet, unmeasured, workers, traced, ceiling, postgresCeiling, peer, ...pooledTargets, ...seconds], next: studentById },
    { name: 'student GET by id, v1', targets: [service], next: () => ({ method: 'GET', path: `/api/v1/students/${randomId(STUDENTS)}` }) },
    { name: 'student GET page of 100', targets: [service, ceiling, postgresCeiling, peer, { server: service, name: GZIP_CLIENT, next: () => ({ method: 'GET', path: `/students?limit=100&after=${randomId(STUDENTS - 100)}`, headers: { 'accept-encoding': 'gzip' } }) }], next: () => ({ method: 'GET', path: `/students?limit=100&after=${randomId(STUDENTS - 100)}` }) },
    { name: 'student GET page of 100, v1', targets: [service], next: () => ({ method: 'GET', path: `/api/v1/students?limit=100&after=${randomId(STUDENTS - 100)}` }) },
    { name: 'student POST', targets: [service, unaudited, feedless, ceiling, postgresCeiling, peer, ...pooledTargets], next: () => ({ method: 'POST', path: '/students', body: newStudent() }) },
    // Rows a second: a batch's rate times its rows, beside single POSTs in the same rounds.
    {
      name: `student batch of ${BATCH_ROWS}`,
      targets: [service, { server: service, name: SINGLE_POSTS, next: () => ({ method: 'POST', path: '/students', body: newStudent() }) }],
      next: () => ({ method: 'POST', path: '/students/batch', body: `[${Array.from({ length: BATCH_ROWS }, newStudent).join(',')}]` })
    },
    { name: 'student POST, v1', targets: [service], next: () => ({ method: 'POST', path: '/api/v1/students', body: newStudent() }) },
    { name: 'student PUT all fields', targets: [service], next: () => { const id = randomId(STUDENTS); return { method: 'PUT', path: `/students/${id}`, body: wholeStudent(id) } } },
    { name: 'student PUT name, v1', targets: [service], next: () => ({ method: 'PUT', path: `/api/v1/students/${randomId(STUDENTS)}`, body: '{"name":"Renamed"}' }) },
    { name: 'student PATCH age', targets: [service], next: () => ({ method: 'PATCH', path: `/students/${randomId(STUDENTS)}`, body: '{"age":44}' }) },
    { name: 'client GET by id (auth)', targets: [service, workers, ...limitedTargets, { server: service, name: UNAUTHENTICATED, next: studentById }, { server: service, name: KEYED, next: () => ({ method: 'GET', path: `/api/clients/${randomId(CLIENTS)}`, headers: byKey }) }], next: () => ({ method: 'GET', path: `/api/clients/${randomId(CLIENTS)}`, headers: auth }) },
    { name: 'client GET page of 100 (auth)', targets: [service], next: () => ({ method: 'GET', path: `/api/clients?limit=100&after=${randomId(CLIENTS - 100)}`, headers: auth }) },
    // An audited create beside the same create by a service that writes no audit log nor outbox row.
    { name: 'client POST (auth)', targets: [service, unaudited], next: () => ({ method: 'POST', path: '/api/clients', body: newClient(), headers: auth }) },
    { name: 'profile (auth)', targets: [service], next: () => ({ method: 'GET', path: '/api/profile', headers: auth }) },
    // A refresh beside the logins, in the same rounds: it costs no password hash.
    { name: 'login', targets: [service, ceiling, { server: service, name: REFRESH, next: nextRefresh }], next: () => ({ method: 'POST', path: '/api/login', body: JSON.stringify({ email: 'bench@example.com', password }) }) },
    // Safe retries and conditional requests, each beside the same request without them.
    {
      name: 'student POST with a fresh Idempotency-Key',
      targets: [service, { server: service, name: 'service, student POST without a key', next: () => ({ method: 'POST', path: '/students', body: newStudent() }) }],
      next: () => ({ method: 'POST', path: '/students', body: newStudent(), headers: { 'idempotency-key': `bench-${++n}-${process.pid}` } })
    },
    {
      name: 'student GET by id answered 304',
      targets: [service, { server: service, name: 'service, the same GETs answered 200', next: () => ({ method: 'GET', path: `/students/${taggedId()}` }) }],
      next: () => { const id = taggedId(); return { method: 'GET', path: `/students/${id}`, headers: { 'if-none-match': tags.get(id)! } } }
    },
    {
      name: 'student PUT with a matching If-Match',
      targets: [service, { server: service, name: 'service, student PUT without If-Match', next: () => { const id = randomId(STUDENTS); return { method: 'PUT', path: `/students/${id}`, body: wholeStudent(id) } } }],
      // Each answer's tag is the next PUT's If-Match for that student.
      next: () => {
        const id = taggedId()
        return { method: 'PUT', path: `/students/${id}`, body: wholeStudent(id), headers: { 'if-match': tags.get(id)! }, onResponse: (_status, headers) => { if (headers.etag) tags.set(id, headers.etag) } }
      }
    }
  ]

  console.error(`seeded ${STUDENTS + TAGGED} students and ${CLIENTS} clients; measuring ${SECONDS} s × ${REPEAT} after ${WARMUP} s of warm-up`)
  const results: { scenario: string, target: string, figures: Measured }[] = []
  // The bare cost of the hash that login checks: argon2id verifications one per core at once
  // (as the service runs them) and four at once, on libuv's pool of four threads and on a
  // pool of one thread per core (as the service's threads of its own), the fastest taken;
  // measured after each round of the login scenario, so that each login run is held to the
  // bare rate of its own minutes.
  const cores = os.availableParallelism()
  const argon2Rounds: Record<string, number>[] = []
  const bareArgon2 = async () => {
    const rates: Record<string, number> = {}
    for (const [parallel, pool] of [[cores, 4], [4, 4], [cores, cores]] as const) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'bench/argon2-rate.ts', String(parallel), String(SECONDS)], {
        env: { ...process.env, UV_THREADPOOL_SIZE: String(pool) }, stdio: ['ignore', 'pipe', 'inherit']
      })
      let out = ''
      child.stdout.on('data', chunk => { out += chunk })
      await once(child, 'exit')
      rates[`${parallel} at once, pool of ${pool}`] = Number(out)
    }
    argon2Rounds.push(rates)
  }

  // PostgreSQL's own CPU a request, when it runs on this machine: the seeding connection's
  // backend names its postmaster.
  const postmaster = await postmasterOf((await db.query('select pg_backend_pid() as pid')).rows[0].pid)
  const opts = { seconds: SECONDS, warmup: WARMUP, repeat: REPEAT, connections: CONNECTIONS, postmaster }
  const endpoint = (target: Target) => 'server' in target
    ? { url: target.server.url, pid: target.server.process.pid!, next: target.next }
    : { url: target.url, pid: target.process.pid! }
  for (const scenario of scenarios.filter(scenario => chosen(scenario.name))) {
    const figures = await measure(scenario.targets.map(endpoint), scenario.next, opts, scenario.name === 'login' ? bareArgon2 : undefined)
    for (const [i, target] of scenario.targets.entries()) {
      results.push({ scenario: scenario.name, target: target.name, figures: figures[i]! })
      console.error(`${scenario.name} · ${target.name}: ${Math.round(figures[i]!.requestsPerSecond)} req/s`)
    }
  }

  // The change feed: lag at 1,000 writes a second over two instances, and webhook deliveries.
  // Before the million students, whose exact counts run on after their rounds and would weigh on it.
  let feed: FeedFigures | undefined
  if (chosen('change feed')) {
    console.error('measuring the change feed')
    // 20,000 deliveries take some 40 s here: a smoke's short rounds send a tenth.
    feed = await benchFeed(server, { rate: 1_000, seconds: SECONDS * REPEAT, events: SECONDS >= 5 ? 20_000 : 2_000 })
  }
  // A file of students imported (a million; a smoke's short rounds, 20,000), beside psql's \copy
  // of it, before the million students are seeded: both write into the table as it stands.
  let imported: ImportFigures | undefined
  if (chosen('million: import')) {
    console.error('measuring the import')
    imported = await benchImport(server, database, db, service, SECONDS >= 5 ? MILLION : 20_000, REPEAT)
  }
  // DELETE last, each request removing another of the rows seeded for it: enough for 40,000
  // a second throughout, whatever the durations.
  const deletable = 40_000 * (WARMUP + SECONDS * REPEAT)
  for (const [name, prefix, variant] of [['student DELETE', '/students', 'b'], ['student DELETE, v1', '/api/v1/students', 'a']] as const) {
    if (!chosen(name)) continue
    // The ids come from the sequence, past any row deleted before: the first is the smallest inserted.
    const { rows: [{ first }] } = await db.query(`with doomed as (insert into students (name, email, age, dob)
      select 'Doomed ' || g, 'doomed-' || $1 || '-' || g || '@example.com', 20, date '2000-01-01' from generate_series(1, ${deletable}) g
      returning id) select min(id) as first from doomed`, [variant])
    let nextDoomed = Number(first)
    const [figures] = await measure([endpoint(service)], () => ({ method: 'DELETE', path: `${prefix}/${nextDoomed++}` }), opts)
    results.push({ scenario: name, target: 'service', figures: figures! })
    console.error(`${name} · service: ${Math.round(figures!.requestsPerSecond)} req/s`)
  }

  // Lists at a million students: the rows seeded so far and 989,000 more, analyzed. Each list
  // is held to the plain page of 100 measured in the same rounds.
  const million = ['million: export', 'million: plain page of 100', 'million: filtered and sorted page', 'million: name contains', 'million: page 5,000 of a sorted list', 'million: first page of a sorted list', 'million: count=estimated', 'million: count=exact']
  if (million.some(chosen)) {
    await db.query(`insert into students (name, email, age, dob)
      select 'Student ' || md5(g::text), 'million' || g || '@example.com', 18 + g % 60, date '1950-01-01' + g % 20000
      from generate_series(1, ${MILLION - STUDENTS - TAGGED}) g`)
    await db.query('analyze students')
    const { rows: [{ count }] } = await db.query('select count(*)::int as count from students')
    // Page 5,000 of `sort=dob`, 100 a page: the cursor after row 499,900, found by following
    // the links of pages of 1,000 (a cursor holds whatever the limit). The sorted lists are
    // oldest first, so that their pages, like the plain page's, hold rows of the million (names
    // of 40 characters): newest first, a first page would be of the 11,000 students seeded
    // above, whose shorter names and addresses make a page 15 % smaller and cheaper to send.
    let cursor = ''
    for (let page = 1, next = '/students?sort=dob&limit=1000'; page <= 500; page++) {
      const res = await fetch(`${service.url}${next}`)
      next = /<([^>]+)>/.exec(res.headers.get('link')!)![1]!
      if (page === 499) next = next.replace('limit=1000', 'limit=900')
      cursor = /cursor=([\w-]+)/.exec(next)![1]!
      await res.arrayBuffer()
    }
    const maxId = Number((await db.query('select max(id) as max from students')).rows[0].max)
    const plainPage = (): Request => ({ method: 'GET', path: `/students?limit=100&after=${randomId(maxId - 1000)}` })
    // Five hex digits of the names' md5: a fragment some 30 names hold, as a search by name finds.
    const fragment = () => Math.floor(Math.random() * 0x100000).toString(16).padStart(5, '0')
    // Each list is measured in the same rounds as the one it is held to, right after it. The
    // exact count comes last, in rounds of its own: its requests, seconds long, run on after
    // the load stops, and would weigh on whatever came next.
    const groups: { name: string, next: () => Request }[][] = [[
      { name: 'million: plain page of 100', next: plainPage },
      { name: 'million: filtered and sorted page', next: () => ({ method: 'GET', path: '/students?age[gte]=20&sort=dob&limit=100' }) },
      { name: 'million: count=estimated', next: () => ({ method: 'GET', path: `/students?limit=100&after=${randomId(maxId - 1000)}&count=estimated` }) },
      { name: 'million: first page of a sorted list', next: () => ({ method: 'GET', path: '/students?sort=dob&limit=100' }) },
      { name: 'million: page 5,000 of a sorted list', next: () => ({ method: 'GET', path: `/students?sort=dob&limit=100&cursor=${cursor}` }) },
      { name: 'million: name contains', next: () => ({ method: 'GET', path: `/students?name[contains]=${fragment()}&limit=100` }) }
    ], [
      { name: 'million: count=exact', next: () => ({ method: 'GET', path: '/students?age[gte]=20&limit=100&count=exact' }) }
    ]]
    console.error(`${count} students; measuring the lists`)
    if (chosen('million: export')) exported = await benchExport(server, database, service, count as number)
    for (const lists of groups) {
      const figures = await measure(lists.map(list => ({ url: service.url, pid: service.process.pid!, next: list.next })), plainPage, opts)
      for (const [i, { name }] of lists.entries()) {
        results.push({ scenario: name, target: 'service', figures: figures[i]! })
        console.error(`${name} · service: ${Math.round(figures[i]!.requestsPerSecond)} req/s`)
      }
    }
  }
  await db.end()

  // The table, with each rate's ratio to the ceiling's and the peer's: measured in the same
  // rounds, the median of the rounds' ratios.
  const find = (scenario: string, target: string) => results.find(r => r.scenario === scenario && r.target === target)?.figures
  const ratio = (a: Measured, b: Measured | undefined) => b ? pairedRatio(a.rounds, b.rounds).toFixed(2) : ''
  const header = ['scenario', 'target', 'req/s', 'p50 ms', 'p99 ms', 'errors', 'non-2xx', 'peak RSS MB', 'CPU µs/req', 'DB CPU µs/req', '× ceiling', '× postgres.js', '× peer']
  const table = results.map(({ scenario, target, figures: f }) => [
    scenario, target, Math.round(f.requestsPerSecond), f.p50, f.p99, f.errors, f.non2xx, f.peakRssMb.toFixed(0), f.cpuMicros.toFixed(0), f.dbCpuMicros > 0 ? f.dbCpuMicros.toFixed(0) : '',
    ratio(f, find(scenario, 'ceiling')),
    ratio(f, find(scenario, POSTGRES_JS)),
    ratio(f, find(scenario, 'peer'))
  ].map(String))
  const widths = header.map((h, i) => Math.max(h.length, ...table.map(row => row[i]!.length)))
  const line = (cells: string[]) => cells.map((cell, i) => i < 2 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)).join('  ')
  console.log(line(header))
  for (const row of table) console.log(line(row))

  // The bare rate is that of the way of hashing fastest over all rounds (the highest median),
  // round by round: the highest of each round's three rates would pick the luckiest of three
  // runs of much the same thing, a few per cent above any one of them on a noisy machine.
  const argon2Rates = Object.fromEntries(Object.keys(argon2Rounds[0] ?? {}).map(how => [how, median(argon2Rounds.map(rates => rates[how]!))]))
  const fastest = Object.keys(argon2Rates).sort((a, b) => argon2Rates[b]! - argon2Rates[a]!)[0]
  const bare = fastest ? argon2Rounds.map(rates => rates[fastest]!) : []
  // Ratios of rates measured in the same rounds; undefined where a scenario was not measured (BENCH_ONLY).
  const rounds = (scenario: string, target: string) => target === 'bare' ? bare : find(scenario, target)?.rounds
  const paired = (scenario: string, a: string, b: string) => {
    const [ra, rb] = [rounds(scenario, a), rounds(scenario, b)]
    return ra && rb?.length ? pairedRatio(ra, rb) : undefined
  }
  // Two processes a side: the rounds' summed rates.
  const summed = (scenario: string, targets: string[]) => {
    const each = targets.map(target => rounds(scenario, target))
    return each.every(r => r?.length) ? each[0]!.map((_, i) => each.reduce((sum, r) => sum + r![i]!, 0)) : undefined
  }
  const pairedSums = (scenario: string, a: string[], b: string[]) => {
    const [ra, rb] = [summed(scenario, a), summed(scenario, b)]
    return ra && rb ? pairedRatio(ra, rb) : undefined
  }
  const pairedRounds = (a: string, b: string) => {
    const [ra, rb] = [find(a, 'service')?.rounds, find(b, 'service')?.rounds]
    return ra && rb?.length ? pairedRatio(ra, rb) : undefined
  }
  const batchRows = rounds(`student batch of ${BATCH_ROWS}`, 'service')?.map(rate => rate * BATCH_ROWS)
  const singleRows = rounds(`student batch of ${BATCH_ROWS}`, SINGLE_POSTS)
  const derived = {
    [`student rows a second, batches of ${BATCH_ROWS} ÷ single POSTs`]: batchRows && singleRows?.length ? pairedRatio(batchRows, singleRows) : undefined,
    'POST with a fresh Idempotency-Key ÷ POST without': paired('student POST with a fresh Idempotency-Key', 'service', 'service, student POST without a key'),
    'GET by id answered 304 ÷ answered 200': paired('student GET by id answered 304', 'service', 'service, the same GETs answered 200'),
    'PUT with a matching If-Match ÷ PUT without': paired('student PUT with a matching If-Match', 'service', 'service, student PUT without If-Match'),
    'authenticated GET ÷ student GET by id': paired('client GET by id (auth)', 'service', UNAUTHENTICATED),
    'API key GET ÷ student GET by id': paired('client GET by id (auth)', KEYED, UNAUTHENTICATED),
    'authenticated GET with rate limits on ÷ off': paired('client GET by id (auth)', LIMITED, 'service'),
    'API key GET with a policy of its own, rate limits on ÷ API key GET, off': paired('client GET by id (auth)', LIMITED_KEY, KEYED),
    'client POST with audit and outbox ÷ without': paired('client POST (auth)', 'service', UNAUDITED),
    'student POST with audit and outbox ÷ without': paired('student POST', 'service', UNAUDITED),
    'student POST with the change feed on ÷ off': paired('student POST', 'service', FEEDLESS),
    'through PgBouncer ÷ direct, student GET by id': paired('student GET by id', POOLED, 'service'),
    'through PgBouncer ÷ direct, student POST': paired('student POST', POOLED, 'service'),
    'login ÷ bare argon2id verify': paired('login', 'service', 'bare'),
    'refresh ÷ login': paired('login', REFRESH, 'service'),
    'ceiling\'s login ÷ bare argon2id verify': paired('login', 'ceiling', 'bare'),
    'logging on ÷ logging off': paired('student GET by id', 'service', 'service, logging off'),
    'gzip client ÷ no Accept-Encoding, student GET page of 100': paired('student GET page of 100', GZIP_CLIENT, 'service'),
    'metrics on ÷ off': paired('student GET by id', 'service', UNMEASURED),
    'metrics on ÷ off, two processes a side': pairedSums('student GET by id', ['service', SECOND], [UNMEASURED, UNMEASURED_SECOND]),
    'two processes of the same build, student GET by id': paired('student GET by id', 'service', SECOND),
    'tracing on ÷ off, student GET by id': paired('student GET by id', TRACED, 'service'),
    '2 workers ÷ 1 process, student GET by id': paired('student GET by id', 'service, 2 workers', 'service'),
    '2 workers ÷ 1 process, authenticated GET': paired('client GET by id (auth)', 'service, 2 workers', 'service'),
    'million: filtered and sorted page ÷ plain page': pairedRounds('million: filtered and sorted page', 'million: plain page of 100'),
    'million: name contains ÷ plain page': pairedRounds('million: name contains', 'million: plain page of 100'),
    'million: page 5,000 ÷ first page of a sorted list': pairedRounds('million: page 5,000 of a sorted list', 'million: first page of a sorted list'),
    'million: count=estimated ÷ plain page': pairedRounds('million: count=estimated', 'million: plain page of 100')
  }
  const argon2PerSecond = fastest ? argon2Rates[fastest] : undefined
  if (argon2PerSecond !== undefined) console.log(`\nbare argon2id verify, medians of the rounds: ${Object.entries(argon2Rates).map(([how, rate]) => `${how}: ${rate.toFixed(1)}/s`).join('; ')}; the fastest: ${fastest}`)
  if (feed) {
    console.log(`\nthe change feed, 1,000 student POSTs a second for ${SECONDS * REPEAT} s over two instances, a stream on each: ${feed.writesPerSecond.toFixed(0)} writes/s (${feed.failedWrites} failed); ` +
      `from a write's answer to its message, p50 ${feed.lagP50.toFixed(0)} ms, p99 ${feed.lagP99.toFixed(0)} ms, max ${feed.lagMax.toFixed(0)} ms, ${feed.missed} missed; ` +
      `webhook deliveries, two instances sending: ${feed.deliveriesPerSecond.toFixed(0)}/s (${feed.deliveries} delivered)`)
  }
  if (exported) {
    console.log(`\nthe whole list of ${exported.rows} students as CSV, ${REPEAT} times: the service ${exported.serviceRowsPerSecond.toFixed(0)} rows/s (peak RSS ${exported.peakRssMb.toFixed(0)} MB), ` +
      `psql's COPY of the same query ${exported.copyRowsPerSecond.toFixed(0)} rows/s; service ÷ COPY ${exported.ratio.toFixed(2)}`)
  }
  if (imported) {
    console.log(`\n${imported.rows} students imported from a CSV file, ${REPEAT} times: the service ${imported.serviceRowsPerSecond.toFixed(0)} rows/s (peak RSS ${imported.peakRssMb.toFixed(0)} MB), ` +
      `psql's \\copy of the same file ${imported.copyRowsPerSecond.toFixed(0)} rows/s; service ÷ \\copy ${imported.ratio.toFixed(2)}`)
  }
  console.log('ratios between targets of the same rounds, the median of the rounds\' ratios:')
  for (const [name, value] of Object.entries(derived)) if (value !== undefined) console.log(`${name}: ${value.toFixed(2)}`)

  await mkdir(OUT, { recursive: true })
  const meta = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, cpu: os.cpus()[0]?.model, seconds: SECONDS, repeat: REPEAT, warmup: WARMUP, connections: CONNECTIONS }
  await writeFile(path.join(OUT, 'latest.json'), JSON.stringify({ meta, argon2PerSecond, argon2Fastest: fastest, argon2Rates, argon2Rounds, derived, feed, exported, imported, results }, null, 2) + '\n')
  const colours: Record<string, string> = { service: '#2b6cb0', 'service, logging off': '#63b3ed', 'service, 2 workers': '#2c5282', [TRACED]: '#3182ce', [UNAUTHENTICATED]: '#90cdf4', [KEYED]: '#4299e1', ceiling: '#718096', [POSTGRES_JS]: '#a0aec0', peer: '#dd6b20' }
  await writeFile(path.join(OUT, 'latest.svg'), barChart(
    `Requests per second, ${CONNECTIONS} connections, median of ${REPEAT} × ${SECONDS} s (${meta.date.slice(0, 10)}, ${meta.cpus} cores)`,
    results.map(({ scenario, target, figures }) => ({ label: `${scenario} · ${target}`, value: figures.requestsPerSecond, colour: colours[target] ?? '#2b6cb0' }))
  ))
} finally {
  for (const s of servers) await stop(s)
  pgbouncer?.stop()
  await drop()
}

interface ExportFigures { rows: number, serviceRowsPerSecond: number, copyRowsPerSecond: number, ratio: number, peakRssMb: number }

/** The lines a pipeline (`command | wc -l`, in bash: a failure of `command` is its failure) writes, and the seconds it took. */
async function countedLines (command: string, env: NodeJS.ProcessEnv = process.env): Promise<{ lines: number, seconds: number }> {
  const started = performance.now()
  const child = spawn('bash', ['-c', `set -o pipefail; ${command} | wc -l`], { env, stdio: ['ignore', 'pipe', 'inherit'] })
  let out = ''
  child.stdout.setEncoding('utf8').on('data', chunk => { out += chunk })
  const [code] = await once(child, 'exit') as [number]
  if (code !== 0) throw new Error(`${command} exited ${code}`)
  return { lines: Number(out.trim()), seconds: (performance.now() - started) / 1000 }
}

/**
 * The whole list as CSV (`Accept: text/csv`, no compression asked for), read to its end by
 * curl, beside psql's `COPY (the same query, its timestamps in the JSON's form) TO STDOUT`,
 * alternately REPEAT times, each client's lines counted by `wc -l`: two C clients, so that the
 * ratio is the service's and not the reader's. The medians of the rows a second, and the
 * service's peak resident memory meanwhile (sampled every 50 ms).
 */
async function benchExport (server: { host: string, port: number, user: string, password: string }, database: string, service: Server, rows: number): Promise<ExportFigures> {
  const services: number[] = []
  const copies: number[] = []
  let peakRssMb = 0
  const header = 1
  for (let round = 0; round < REPEAT; round++) {
    const { result: exported, peakMb } = await withPeakRss(service.process.pid!, async () =>
      countedLines(`curl -sS --fail -H 'accept: text/csv' '${service.url}/students'`))
    peakRssMb = Math.max(peakRssMb, peakMb)
    if (exported.lines - header !== rows) throw new Error(`the export sent ${exported.lines - header} rows of ${rows}`)
    services.push(rows / exported.seconds)
    const timestamps = ['created_at', 'updated_at'].map(column => `to_char(date_trunc('milliseconds', ${column}) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as ${column}`).join(', ')
    const query = `copy (select id, name, email, age, dob, ${timestamps} from students order by id) to stdout (format csv, header)`
    const copied = await countedLines(`psql -h ${server.host} -p ${server.port} -U ${server.user} -d ${database} -Atqc "$COPY_QUERY"`,
      { ...process.env, PGPASSWORD: server.password, COPY_QUERY: query })
    if (copied.lines - header !== rows) throw new Error(`psql's COPY wrote ${copied.lines - header} rows of ${rows}`)
    copies.push(rows / copied.seconds)
  }
  const serviceRowsPerSecond = median(services)
  const copyRowsPerSecond = median(copies)
  return { rows, serviceRowsPerSecond, copyRowsPerSecond, ratio: serviceRowsPerSecond / copyRowsPerSecond, peakRssMb }
}
