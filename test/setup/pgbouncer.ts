import { spawn, spawnSync } from 'node:child_process'
import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import type { DatabaseConfig } from '../../lib/process/config.js'

/** Whether a `pgbouncer` is on the PATH (.ci/run installs Debian's). */
export const pgbouncerInstalled = spawnSync('pgbouncer', ['--version']).status === 0

export interface PgBouncer {
  /** Where it listens: 127.0.0.1 at this port. */
  port: number
  stop: () => void
}

/**
 * A PgBouncer in transaction mode in front of a PostgreSQL server, on a port of its own, with
 * `size` server connections for each database and user: fewer than the service's pool, so
 * that its transactions take turns on shared server connections. Every database of the server
 * is reachable through it, under its own name.
 */
export async function startPgBouncer (server: DatabaseConfig, port: number, size = 2): Promise<PgBouncer> {
  const folder = mkdtempSync(path.join(os.tmpdir(), 'pgbouncer-'))
  const quote = (value: string) => `"${value.replaceAll('"', '""')}"`
  writeFileSync(path.join(folder, 'users.txt'), `${quote(server.user)} ${quote(server.password)}\n`)
  writeFileSync(path.join(folder, 'pgbouncer.ini'), [
    '[databases]',
    `* = host=${server.host} port=${server.port}`,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${path.join(folder, 'users.txt')}`,
    'pool_mode = transaction',
    `default_pool_size = ${size}`,
    'max_client_conn = 1000',
    'server_login_retry = 1',
    // Errors only: a line for every connection would bury the tests' own output.
    'log_connections = 0',
    'log_disconnections = 0',
    'log_stats = 0',
    ''
  ].join('\n'))
  // PgBouncer refuses to run as root: then it runs as the postgres user, as PostgreSQL does.
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout)
    chownSync(folder, id('-u'), id('-g'))
  }
  const child = spawn('pgbouncer', [...asRoot ? ['-u', 'postgres'] : [], path.join(folder, 'pgbouncer.ini')], { stdio: ['ignore', 'ignore', 'inherit'] })
  const stop = () => {
    child.kill('SIGKILL')
    rmSync(folder, { recursive: true, force: true })
  }
  for (const deadline = Date.now() + 10_000; ; await new Promise(resolve => setTimeout(resolve, 50))) {
    const up = await new Promise<boolean>(resolve => {
      const socket = net.connect(port, '127.0.0.1', () => { socket.end(); resolve(true) }).on('error', () => resolve(false))
    })
    if (up) return { port, stop }
    if (Date.now() > deadline || child.exitCode !== null) {
      stop()
      throw new Error('PgBouncer did not start')
    }
  }
}
