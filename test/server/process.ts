import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readdir, readFile } from 'node:fs/promises'
import http from 'node:http'
import net from 'node:net'
import readline from 'node:readline'
import path from 'node:path'
import type { Test } from 'tap'
import { createDatabase, TEST_JWT_SECRET } from '../helper.js'

export interface ServerProcess {
  process: ChildProcess
  url: string
  logs: Record<string, unknown>[]
  /** Kills the server and its workers (pg_ctl puts an embedded PostgreSQL in a session of its own). */
  kill: () => void
}

/**
 * Runs server.ts with the TypeScript loader (and coverage) of this test process, in a process
 * group of its own: a test that fails midway kills the whole group, workers too, which would
 * otherwise hold its output pipe open and keep the test file from ending.
 */
export function spawnServer (env: NodeJS.ProcessEnv, stderr: 'inherit' | 'pipe' = 'inherit') {
  // Metrics on any free port, so that servers running at once do not contend for 9464.
  return spawn(process.execPath, [...process.execArgv, 'server.ts'], { env: { METRICS_PORT: '0', ...env }, stdio: ['ignore', 'pipe', stderr], detached: true })
}

/** Kills a process group started by spawnServer, if anything of it still runs. */
function killGroup (child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL')
  } catch { /* already gone */ }
}

/** Starts server.ts and waits until it listens; its JSON log lines are collected. */
export async function startServer (env: NodeJS.ProcessEnv): Promise<ServerProcess> {
  // As in the in-process tests: no load shedding while TypeScript compiles on a shared machine.
  const child = spawnServer({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info', MAX_EVENT_LOOP_DELAY: '60s', ...env })
  const logs: Record<string, unknown>[] = []
  const lines = readline.createInterface({ input: child.stdout! })
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', code => reject(new Error(`server exited with ${code}`)))
    lines.on('line', line => {
      const entry = JSON.parse(line)
      logs.push(entry)
      const match = /^Server listening at (http:\/\/127\.0\.0\.1:\d+)$/.exec(entry.msg)
      if (match) resolve(match[1]!)
    })
  })
  return { process: child, url, logs, kill: () => killGroup(child) }
}

/** The pids of the workers (WORKERS > 1) that said they listen, in order. */
export const listeningWorkers = (server: ServerProcess) =>
  server.logs.filter(entry => typeof entry.msg === 'string' && entry.msg.startsWith('Server listening at')).map(entry => entry.pid as number)

/** The environment of `npm start` with no database settings: the embedded PostgreSQL in `dataDir`. */
export function embeddedEnv (dataDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, DATA_DIR: dataDir }
  delete env.DB_HOST
  return env
}

/** Sends the embedded PostgreSQL's postmaster a signal: SIGINT stops it fast, as `pg_ctl stop` does. */
export async function signalPostmaster (dataDir: string, signal: NodeJS.Signals): Promise<void> {
  const pid = Number((await readFile(path.join(dataDir, 'postgres', 'postmaster.pid'), 'utf8')).split('\n')[0])
  process.kill(pid, signal)
}

/** Kills the embedded PostgreSQL's postmaster outright, as a crash or the OOM killer would. */
export async function killPostmaster (dataDir: string): Promise<void> {
  await signalPostmaster(dataDir, 'SIGKILL')
}

/** The environment that points a server process at a fresh test database. */
export async function databaseEnv (t: Test): Promise<NodeJS.ProcessEnv> {
  const db = await createDatabase(t)
  return { ...process.env, JWT_SECRET: TEST_JWT_SECRET, DB_HOST: db.host, DB_PORT: String(db.port), DB_NAME: db.database, DB_USER: db.user, DB_PASSWORD: db.password }
}

/** A POST whose body is sent in two parts with `between` run in the middle: a request in flight. */
export function slowPost (url: string, body: string, between: () => Promise<void>) {
  return new Promise<{ status: number, body: string }>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => {
      let text = ''
      res.on('data', chunk => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, body: text }))
    })
    req.on('error', reject)
    req.write(body.slice(0, 10))
    between().then(() => req.end(body.slice(10)), reject)
  })
}

export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** A TCP port of 127.0.0.1 that nothing listens on, for a server of a test's own. */
export async function freePort (): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as net.AddressInfo
  server.close()
  return port
}

/**
 * HAProxy with deploy/haproxy.cfg, as the deployments run it, in front of two instances (the
 * same one twice for a single instance), killed when the test ends. Resolves to its URL once it
 * sends requests to an instance that is ready, or to null if it never does within 10 s.
 */
export async function startBalancer (t: Test, instances: [string, string]): Promise<string | null> {
  const lbPort = await freePort()
  const balancer = spawn('haproxy', ['-db', '-f', path.resolve('deploy/haproxy.cfg')], {
    env: { ...process.env, LB_BIND: `127.0.0.1:${lbPort}`, INSTANCE_1: new URL(instances[0]).host, INSTANCE_2: new URL(instances[1]).host },
    stdio: ['ignore', 'ignore', 'inherit']
  })
  t.teardown(() => balancer.kill('SIGKILL'))
  const url = `http://127.0.0.1:${lbPort}`
  for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
    if (await fetch(`${url}/health/ready`).then(res => res.ok, () => false)) return url
  }
  return null
}

/** The pids of a process's children (a primary's workers), from /proc. */
export async function childPids (pid: number): Promise<number[]> {
  const children: number[] = []
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '')
    // "pid (name) state ppid …", where the name may hold spaces and parentheses.
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) children.push(Number(entry))
  }
  return children
}

/**
 * A TCP relay to a server of the tests' PostgreSQL, closed when the test ends. Once told to
 * `hold`, it takes every new connection and never answers, as a database that has stopped
 * answering does; `held` counts those.
 */
export async function databaseRelay (t: Test, env: NodeJS.ProcessEnv, { holding = false } = {}) {
  const sockets = new Set<net.Socket>()
  let held = 0
  const server = net.createServer(client => {
    sockets.add(client)
    client.on('close', () => sockets.delete(client))
    client.on('error', () => {})
    if (holding) { held++; return }
    // The embedded test server is reached on its Unix socket (DB_HOST is its folder), as pg does.
    const upstream = env.DB_HOST!.startsWith('/')
      ? net.connect(path.join(env.DB_HOST!, `.s.PGSQL.${env.DB_PORT}`))
      : net.connect(Number(env.DB_PORT), env.DB_HOST)
    sockets.add(upstream)
    upstream.on('close', () => { sockets.delete(upstream); client.destroy() })
    upstream.on('error', () => {})
    client.on('close', () => upstream.destroy())
    client.pipe(upstream).pipe(client)
  }).listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    server.close()
  })
  return {
    env: { ...env, DB_HOST: '127.0.0.1', DB_PORT: String((server.address() as net.AddressInfo).port) },
    hold: () => { holding = true },
    held: () => held
  }
}
