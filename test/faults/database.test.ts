import { spawnSync } from 'node:child_process'
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import pg from 'pg'
import type { FastifyInstance } from 'fastify'
import { EmbeddedPostgres } from '../../lib/db/embedded-postgres.js'
import { build, buildApp, createDatabase, testConfig, within } from '../helper.js'
import { ada } from '../routes/students/fixtures.js'
import { bearer, userWithRoles } from '../routes/api/accounts.js'
import { databaseProxy } from './database-proxy.js'

const POOL_MAX = 3

async function timed<T> (work: Promise<T>): Promise<[T, number]> {
  const started = Date.now()
  const result = await work
  return [result, Date.now() - started]
}

const appConnections = async (app: FastifyInstance) => {
  const { rows } = await app.knex.raw<{ rows: { n: string }[] }>(
    "select count(*) as n from pg_stat_activity where datname = current_database() and application_name = 'student-records-api'")
  return Number(rows[0]!.n)
}

/** The processes of a running PostgreSQL: the postmaster and its children. */
async function serverProcesses (server: EmbeddedPostgres): Promise<number[]> {
  const postmaster = Number((await readFile(path.join(server.pgdata, 'postmaster.pid'), 'utf8')).split('\n')[0])
  const children = spawnSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number)
  return [postmaster, ...children]
}

t.test('database stopped, then frozen: 503 with Retry-After in time, live but not ready; back: 2xx within 5 s', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'students-fault-'))
  await chmod(dataDir, 0o755)
  const server = new EmbeddedPostgres(dataDir)
  await server.start()
  t.teardown(async () => {
    await server.stop()
    await rm(dataDir, { recursive: true, force: true })
  })
  const config = testConfig(server.connection, { dbPoolMax: POOL_MAX })
  const app = await buildApp(t, { ...config, timeouts: { ...config.timeouts, handler: 1_500 } })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)

  await server.stop()
  for (const [method, url] of [['GET', '/students/1'], ['POST', '/students'], ['GET', '/health/ready']] as const) {
    const [res, ms] = await timed(app.inject({ method, url, ...(method === 'POST' && { payload: { ...ada, email: 'down@example.com' } }) }))
    t.equal(res.statusCode, 503, `${method} ${url}`)
    t.equal(res.headers['retry-after'], '5')
    t.ok(ms < 3_000, `answered in ${ms} ms`)
  }
  t.equal((await app.inject({ url: '/health/live' })).statusCode, 200, 'live meanwhile')

  await server.start()
  t.ok(await within(5_000, async () => (await app.inject({ url: '/students/1' })).statusCode === 200), 'serving again within 5 s')
  await Promise.all(Array.from({ length: 20 }, () => app.inject({ url: '/students' })))
  t.ok(await appConnections(app) <= POOL_MAX, 'never more connections than the pool holds')
  t.equal((await app.inject({ url: '/students' })).json().length, 1, 'the POST answered 503 wrote nothing')

  // Every process of the server stopped (SIGSTOP): connections hang rather than fail.
  const frozen = await serverProcesses(server)
  for (const pid of frozen) process.kill(pid, 'SIGSTOP')
  try {
    const answers = await Promise.all([1, 2, 3].map(() => timed(app.inject({ url: '/students/1' }))))
    for (const [res, ms] of answers) {
      t.equal(res.statusCode, 503, 'frozen')
      t.equal(res.headers['retry-after'], '5')
      t.ok(ms < 3_000, `answered in ${ms} ms`)
    }
  } finally {
    for (const pid of frozen) process.kill(pid, 'SIGCONT')
  }
  t.ok(await within(5_000, async () => (await app.inject({ url: '/students/1' })).statusCode === 200), 'serving again within 5 s of SIGCONT')
})

t.test('database frozen: 503 with Retry-After within the handler timeout; thawed: serving again', async t => {
  const proxy = await databaseProxy(t, await createDatabase(t))
  const config = testConfig(proxy.db, { dbPoolMax: POOL_MAX })
  const app = await buildApp(t, { ...config, timeouts: { ...config.timeouts, handler: 1_500 } })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)

  proxy.freeze()
  const answers = await Promise.all(Array.from({ length: 6 }, () => timed(app.inject({ url: '/students/1' }))))
  for (const [res, ms] of answers) {
    t.equal(res.statusCode, 503)
    t.equal(res.headers['retry-after'], '5')
    t.ok(ms < 3_000, `answered in ${ms} ms`)
  }
  proxy.thaw()
  t.ok(await within(5_000, async () => (await app.inject({ url: '/students/1' })).statusCode === 200), 'serving again within 5 s')
})

t.test('a new connection that does not open in DB_CONNECT_TIMEOUT answers 503 then, long before DB_ACQUIRE_TIMEOUT', async t => {
  const proxy = await databaseProxy(t, await createDatabase(t))
  const config = testConfig(proxy.db, { dbPoolMax: 8 })
  const app = await buildApp(t, { ...config, timeouts: { ...config.timeouts, dbConnect: 300, dbAcquire: 5_000, handler: 8_000 } })
  t.equal((await app.inject({ method: 'POST', url: '/students', payload: ada })).statusCode, 201)

  // Frozen, the idle connections hang their requests; the pool opens new ones for the rest,
  // whose connects the proxy never answers.
  proxy.freeze()
  const idle = app.pgPool.idleCount
  const answers = await Promise.all(Array.from({ length: idle + 3 }, () => timed(app.inject({ url: '/students/1' }))))
  proxy.thaw()
  const early = answers.filter(([res, ms]) => res.statusCode === 503 && ms < 2_500)
  t.ok(early.length >= 3, `${early.length} of ${answers.length} answered 503 in ${early.map(([, ms]) => ms).join(', ')} ms`)
})

t.test('connections killed mid-load: only requests in flight fail, with 503, and no write is half done', async t => {
  const app = await build(t)
  const admin = await userWithRoles(app, ['Admin'])
  const statuses = new Map<number, number>()
  const created: number[] = []
  let running = true
  let n = 0
  const client = async () => {
    // eslint-disable-next-line no-unmodified-loop-condition -- set to false elsewhere while the loop awaits
    while (running) {
      const res = await app.inject({
        method: 'POST', url: '/api/roles', headers: bearer(admin.token), payload: { name: `Role ${++n}`, permission: ['client-list', 'client-create'] }
      })
      statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1)
      if (res.statusCode === 201) created.push(res.json().data.id)
    }
  }
  const killer = new pg.Client(app.config.db!)
  await killer.connect()
  t.teardown(() => killer.end())
  const load = Promise.all(Array.from({ length: 5 }, client))
  let killed = 0
  for (let i = 0; i < 10; i++) {
    await new Promise(resolve => setTimeout(resolve, 200))
    const { rowCount } = await killer.query('select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')
    killed += rowCount ?? 0
  }
  await new Promise(resolve => setTimeout(resolve, 500))
  const before = created.length
  await new Promise(resolve => setTimeout(resolve, 500))
  running = false
  await load

  t.ok(killed > 0, `${killed} connections killed`)
  t.same([...statuses.keys()].filter(code => code !== 201 && code !== 503), [], `only 201 and 503: ${JSON.stringify([...statuses])}`)
  t.ok(created.length > before, 'writes succeed again once the killing stops')
  const { rows } = await killer.query<{ id: number, permissions: number }>(`
    select r.id, count(rp.permission_id)::int as permissions from roles r left join role_permissions rp on rp.role_id = r.id
    where r.name like 'Role %' group by r.id`)
  t.same(rows.filter(row => row.permissions !== 2), [], 'every role has both its permissions: none half written')
  const ids = new Set(rows.map(row => row.id))
  t.same(created.filter(id => !ids.has(id)), [], 'every role answered 201 exists')
})

t.test('overloaded: 503 with Retry-After at once instead of growing latency; back to normal within 10 s', async t => {
  const app = await build(t, config => { config.timeouts.maxEventLoopDelay = 100 })
  // Serving, once the build's own stall (compiling every route's schemas) has left the samples.
  t.ok(await within(5_000, async () => (await app.inject({ url: '/students' })).statusCode === 200))

  // The event loop stalls again and again, as under more work than it can do; the requests that
  // arrive meanwhile. Each lag sample replaces the last, 25 ms apart: on a busy machine a batch
  // can reach the service after a calm sample, so the stalls go on until one is shed.
  let batch: Awaited<ReturnType<typeof app.inject>>[] = []
  for (let stalls = 0; stalls < 20 && batch[0]?.statusCode !== 503; stalls++) {
    const until = Date.now() + 600
    while (Date.now() < until) { /* busy */ }
    await new Promise(resolve => setTimeout(resolve, 0)) // the overdue lag sample is taken
    batch = await Promise.all(['/students', '/health/ready', '/health/live'].map(url => app.inject({ url })))
  }
  const [shed, ready, live] = batch
  t.equal(shed!.statusCode, 503)
  t.equal(shed!.headers['retry-after'], '5')
  t.match(shed!.json(), { success: false, statusCode: 503, message: 'The service is overloaded; try again later' })
  t.equal(ready!.statusCode, 503, 'not ready: a balancer sends work elsewhere')
  t.equal(live!.statusCode, 200, 'but live: nobody restarts it')

  t.ok(await within(10_000, async () => (await app.inject({ url: '/students' })).statusCode === 200), 'serving again within 10 s')
})

t.test('a connection killed under a prepared query: that request gets 503, and the service serves on', async t => {
  const app = await build(t)
  const { id } = (await app.inject({ method: 'POST', url: '/students', payload: { name: 'Kept', email: 'kept@example.com', age: 20, dob: '2000-01-01' } })).json()
  // The read waits on a lock held here, so that its connection is lent out, mid-query, when killed.
  const holder = new pg.Client(app.config.db!)
  await holder.connect()
  t.teardown(() => holder.end())
  await holder.query('begin')
  await holder.query('lock table students in access exclusive mode')
  const read = app.inject({ url: `/students/${id}` })
  t.ok(await within(5_000, async () => {
    const { rowCount } = await holder.query("select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()")
    return rowCount === 1
  }), 'the waiting read\'s connection killed')
  const res = await read
  t.equal(res.statusCode, 503)
  t.match(res.json(), { success: false, statusCode: 503, message: 'The database is unavailable; try again later' })
  await holder.query('commit')
  const after = await app.inject({ url: `/students/${id}` })
  t.equal(after.statusCode, 200, `serving on: ${after.body}`)
})
