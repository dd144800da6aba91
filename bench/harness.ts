// What the benchmark scripts share: a fresh database on the benchmark's PostgreSQL, and
// server processes started on free ports and stopped again.
import { spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { once } from 'node:events'
import net from 'node:net'
import path from 'node:path'
import pg from 'pg'
import { EmbeddedPostgres } from '../lib/db/embedded-postgres.js'

export const freePort = async () => {
  const server = net.createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as net.AddressInfo
  server.close()
  return port
}

export interface Server { name: string, url: string, process: ChildProcess }

/**
 * Starts a server process and waits until it answers. Its metrics listener, on unless the
 * target turns it off, takes any free port: the targets run side by side.
 */
export async function start (name: string, args: string[], env: NodeJS.ProcessEnv): Promise<Server> {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const child = spawn(process.execPath, args, { env: { METRICS_PORT: '0', ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'ignore', 'inherit'] })
  let exited = false
  child.once('exit', () => { exited = true })
  for (const deadline = Date.now() + 60_000; ;) {
    if (exited) throw new Error(`${name} exited`)
    if (await fetch(`${url}/students?limit=1`).then(res => res.ok, () => false)) break
    if (Date.now() > deadline) throw new Error(`${name} did not answer within a minute`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  return { name, url, process: child }
}

export async function stop (server: Server) {
  // One that has exited already (it died under load) would never say so again.
  if (server.process.exitCode !== null || server.process.signalCode !== null) return
  const exited = once(server.process, 'exit')
  server.process.kill('SIGTERM')
  await exited
}

export interface BenchDatabase {
  /** The server's connection settings, and the fresh database's name on it. */
  server: pg.ClientConfig & { host: string, port: number, user: string, password: string }
  database: string
  /** The environment of a service process on that database, rate limits out of the way. */
  env: NodeJS.ProcessEnv
  /** Drops the database, and stops the PostgreSQL if it was started for this. */
  drop: () => Promise<void>
}

/** A fresh database on DB_HOST … when set, else on an embedded PostgreSQL of the benchmark's own. */
export async function benchDatabase (): Promise<BenchDatabase> {
  // Room for every server of a run at once: some fifteen processes of pools of DB_POOL_MAX (10).
  const embedded = process.env.DB_HOST ? undefined : new EmbeddedPostgres(path.resolve('.data', 'bench'), { maxConnections: 300 })
  const startedEmbedded = await embedded?.start()
  const server = embedded?.connection ?? {
    host: process.env.DB_HOST!,
    port: Number(process.env.DB_PORT ?? 5432),
    database: process.env.DB_NAME ?? 'postgres',
    user: process.env.DB_USER ?? 'postgres',
    password: process.env.DB_PASSWORD ?? ''
  }
  const fresh = await anotherDatabase(server)
  return {
    ...fresh,
    async drop () {
      await fresh.drop()
      if (startedEmbedded) await embedded?.stop()
    }
  }
}

/** Another fresh database on the same server, for a measurement no other process may touch. */
export async function anotherDatabase (server: BenchDatabase['server']): Promise<BenchDatabase> {
  const database = `bench_${Date.now()}_${randomBytes(3).toString('hex')}`
  const admin = new pg.Client(server)
  await admin.connect()
  await admin.query(`create database ${database}`)
  await admin.end()
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DB_HOST: server.host,
    DB_PORT: String(server.port),
    DB_NAME: database,
    DB_USER: server.user,
    DB_PASSWORD: server.password,
    JWT_SECRET: randomBytes(32).toString('hex'),
    LOG_LEVEL: 'info',
    AUTH_RATE_LIMIT_IP: '1000000',
    AUTH_RATE_LIMIT_EMAIL: '1000000'
  }
  return {
    server,
    database,
    env,
    async drop () {
      const cleanup = new pg.Client(server)
      await cleanup.connect()
      await cleanup.query(`drop database if exists ${database} with (force)`)
      await cleanup.end()
    }
  }
}
