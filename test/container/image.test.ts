// The image the Dockerfile builds, run with podman (.ci/container builds it and runs this file
// with CONTAINER_IMAGE set; without it, these tests are skipped): on the test PostgreSQL and on
// its embedded one, as the unprivileged user with a read-only root filesystem, shut down under
// load, the npm commands of a checkout run in a container, and as compose.yaml runs it (a
// migration step, two instances, HAProxy in front).
import { execFile, spawn } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { promisify } from 'node:util'
import t, { type Test } from 'tap'
import { TEST_JWT_SECRET } from '../helper.js'
import { databaseEnv, freePort, sleep, startBalancer } from '../server/process.js'
import { writeUntilRefused, writtenStudents } from '../server/writers.js'

const run = promisify(execFile)
const image = process.env.CONTAINER_IMAGE
const skip = image ? false : 'CONTAINER_IMAGE is not set (.ci/container builds the image and sets it)'
const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })

const podman = async (...args: string[]) => (await run('podman', args, { maxBuffer: 16 * 1024 * 1024 })).stdout.trim()

interface Container { id: string, url: string, metricsUrl: string, startedIn: number }

/**
 * Runs the image as compose.yaml and the Kubernetes Deployment do: a read-only root filesystem
 * with no writable /tmp either (podman's --read-only alone would add one), on the host's network
 * to reach the test PostgreSQL; waits until /health/ready answers 200.
 */
async function runImage (t: Test, env: Record<string, string | undefined>, options: string[] = []): Promise<Container> {
  const [port, metricsPort] = [await freePort(), await freePort()]
  const settings = { ...env, PORT: String(port), METRICS_PORT: String(metricsPort) }
  const started = Date.now()
  const id = await podman('run', '--detach', '--read-only', '--read-only-tmpfs=false', '--network=host',
    ...Object.entries(settings).flatMap(([name, value]) => value === undefined ? [] : ['--env', `${name}=${value}`]),
    ...options, image!)
  t.teardown(() => podman('rm', '--force', '--time', '0', id))
  const url = `http://127.0.0.1:${port}`
  for (;;) {
    if (await fetch(`${url}/health/ready`).then(res => res.ok, () => false)) break
    if (await podman('inspect', '--format', '{{.State.Running}}', id) !== 'true') {
      throw new Error(`the container exited: ${await podman('logs', id)}`)
    }
    if (Date.now() - started > 120_000) throw new Error('the container was not ready within 2 minutes')
    await sleep(100)
  }
  return { id, url, metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`, startedIn: Date.now() - started }
}

/** SIGTERM to the container (podman stop); its exit code. */
async function stopContainer (id: string): Promise<number> {
  await podman('stop', '--time', '30', id)
  return Number(await podman('inspect', '--format', '{{.State.ExitCode}}', id))
}

/** The settings of a fresh test database, for the image. */
async function databaseSettings (t: Test) {
  const env = await databaseEnv(t)
  const settings = { DB_HOST: env.DB_HOST, DB_PORT: env.DB_PORT, DB_NAME: env.DB_NAME, DB_USER: env.DB_USER, DB_PASSWORD: env.DB_PASSWORD, JWT_SECRET: TEST_JWT_SECRET }
  return { env, settings }
}

/** The typed client's whole scenario (both interfaces, as in test/client.test.ts) against `url`: its last step. */
async function clientScenario (url: string): Promise<string> {
  const { stdout } = await run('npx', ['tsx', 'examples/client/scenario.ts', url])
  return stdout.trim().split('\n').at(-1)!
}

t.test('on an external PostgreSQL: the client scenario passes, as uid 1000 under tini with a read-only root; health check and metrics answer', { skip }, async t => {
  const { settings } = await databaseSettings(t)
  const container = await runImage(t, { ...settings, REGISTER_ROLES: 'User' })
  t.comment(`ready ${container.startedIn} ms after podman run, migrations included`)

  t.equal(await clientScenario(container.url), 'ok - it is gone from v1 too', 'the whole scenario of both interfaces')
  t.equal(await podman('exec', container.id, 'id', '-u'), '1000', 'the service runs as uid 1000')
  const processes = (await podman('top', container.id, 'pid', 'args')).split('\n').slice(1).map(line => line.trim().split(/\s+/))
  t.same(processes[0]?.slice(0, 2), ['1', 'tini'], 'tini is process 1')
  t.ok(processes.some(([, command, script]) => command === 'node' && script === 'dist/server.js'), 'under it, node dist/server.js')
  // The image's HEALTHCHECK, run once (podman runs it on a timer only under systemd).
  await t.resolves(podman('healthcheck', 'run', container.id), 'the health check passes')
  const metrics = await fetch(container.metricsUrl)
  t.equal(metrics.status, 200)
  t.match(await metrics.text(), /^http_request_duration_seconds_count\{.*route="\/students".*\} \d+$/m, 'metrics on their own port')
  // Run with a read-only root and no writable /tmp, the service wrote nowhere: it could not have.
  await t.rejects(podman('exec', container.id, 'touch', '/tmp/probe'), 'the root filesystem is read-only, /tmp too')
})

t.test('SIGTERM to the container under 20 writers on keep-alive connections, taken out of rotation as a balancer would: every request gets an answer, none is reset; exit 0; every 201 kept', { skip }, async t => {
  const { env, settings } = await databaseSettings(t)
  const container = await runImage(t, { ...settings, SHUTDOWN_DELAY: '1s' })
  // A balancer's health check, every 100 ms: once /health/ready fails, no new request is sent.
  // (Clients that go on opening connections until the listener closes race the kernel, which
  // resets the connections it had queued but the service had not yet accepted.)
  let outOfRotation = false
  const check = setInterval(() => {
    fetch(`${container.url}/health/ready`).then(res => { if (res.status !== 200) outOfRotation = true }, () => { outOfRotation = true })
  }, 100)
  t.teardown(() => clearInterval(check))
  const load = writeUntilRefused(container.url, 20, () => outOfRotation)
  await sleep(1_500)
  const code = await stopContainer(container.id)
  const { sent, created, unanswered, unexpected, resetNew } = await load
  t.equal(code, 0, 'tini passed SIGTERM on, and the service exited 0')
  t.same(unanswered, [], `none of ${sent} requests was left without an answer`)
  t.equal(resetNew, 0, 'no new connection was reset either: none was opened once out of rotation')
  t.same(unexpected, [], 'every answer was 201, or 503 with Retry-After and Connection: close')
  t.ok(created.length > 0)
  t.same(await writtenStudents(env), [...created].sort((a, b) => a - b), `every one of the ${created.length} students answered 201 exists, and nothing else`)
})

t.test('without DB_HOST, on the embedded PostgreSQL in the /data volume: data and tokens outlive the container', { skip }, async t => {
  const volume = `student-records-test-${randomUUID()}`
  await podman('volume', 'create', volume)
  t.teardown(() => podman('volume', 'rm', '--force', volume))
  const first = await runImage(t, {}, ['--volume', `${volume}:/data`])
  t.comment(`ready ${first.startedIn} ms after podman run, a new embedded PostgreSQL initialised`)
  const created = await fetch(`${first.url}/students`, json({ name: 'Kept', email: 'kept@example.com', age: 30, dob: '1996-01-01' }))
  t.equal(created.status, 201)
  const student = await created.json() as { id: number }
  const password = 'a password kept in the volume'
  await fetch(`${first.url}/api/register`, json({ name: 'Kept', email: 'kept@example.com', password, c_password: password }))
  const login = await (await fetch(`${first.url}/api/login`, json({ email: 'kept@example.com', password }))).json() as { data: string }
  t.equal(await stopContainer(first.id), 0, 'stopped cleanly, the embedded PostgreSQL with it')

  const second = await runImage(t, {}, ['--volume', `${volume}:/data`])
  t.comment(`ready ${second.startedIn} ms after podman run, on the volume's PostgreSQL`)
  t.same(await (await fetch(`${second.url}/students/${student.id}`)).json(), student, 'the student is still there')
  const profile = await fetch(`${second.url}/api/profile`, { headers: { authorization: `Bearer ${login.data}` } })
  t.equal(profile.status, 200, 'a token of the first container holds: the JWT secret generated in /data was kept')
})

t.test('the first administrator\'s password missed in the log: npm run reset-password in the running container, as in a checkout, gives one that logs in; npm run migrate runs too', { skip }, async t => {
  const volume = `student-records-test-${randomUUID()}`
  await podman('volume', 'create', volume)
  t.teardown(() => podman('volume', 'rm', '--force', volume))
  const container = await runImage(t, {}, ['--volume', `${volume}:/data`])
  const logged = (await podman('logs', container.id)).split('\n').map(line => { try { return JSON.parse(line) as { msg?: string, password?: string } } catch { return {} } })
  const first = logged.find(entry => entry.msg === 'created the administrator: this password is shown once only')?.password
  t.ok(first, 'the first password is in the log, once')
  const login = (password: string) => fetch(`${container.url}/api/login`, json({ email: 'admin@example.com', password }))

  const reset = await podman('exec', container.id, 'npm', 'run', 'reset-password', '--', 'admin@example.com')
  const password = /^The new password of admin@example\.com: (\S+)$/m.exec(reset)?.[1]
  t.ok(password, `a new password, printed: ${reset}`)
  t.equal((await login(password!)).status, 200, 'it logs in')
  t.equal((await login(first!)).status, 401, 'the first one no longer does')

  t.match(await podman('exec', container.id, 'npm', 'run', 'migrate'), /^The database is at the latest schema already$/m, 'npm run migrate, on dist/ as it is')
})

t.test('as compose.yaml runs it: a migration step, two instances that do not migrate, HAProxy with deploy/haproxy.cfg in front', { skip }, async t => {
  const { settings } = await databaseSettings(t)
  const early = await podman('run', '--detach', '--read-only', '--network=host', ...Object.entries(settings).flatMap(([name, value]) => ['--env', `${name}=${value}`]),
    '--env', 'MIGRATE=false', '--env', `PORT=${await freePort()}`, '--env', 'METRICS_PORT=off', image!)
  t.teardown(() => podman('rm', '--force', '--time', '0', early))
  t.equal(Number(await podman('wait', early)), 1, 'an instance with MIGRATE=false on an unmigrated database exits 1')
  t.match(await podman('logs', early), /The database lacks \d+ migration\(s\) of this release/, 'saying why')

  const migrate = spawn('podman', ['run', '--rm', '--read-only', '--network=host',
    ...Object.entries(settings).flatMap(([name, value]) => ['--env', `${name}=${value}`]), image!, 'node', 'dist/scripts/migrate.js'], { stdio: 'ignore' })
  const migrated = await new Promise<number | null>(resolve => migrate.on('exit', resolve))
  t.equal(migrated, 0, 'the migration step ran to its end')

  const instances = await Promise.all([1, 2].map(() => runImage(t, { ...settings, MIGRATE: 'false', REGISTER_ROLES: 'User' })))
  const url = await startBalancer(t, [instances[0]!.url, instances[1]!.url])
  t.ok(url, 'HAProxy sends to the instances')
  t.equal(await clientScenario(url!), 'ok - it is gone from v1 too', 'the client scenario through the balancer')
})
