import { rmSync } from 'node:fs'
import { mkdir, rm } from 'node:fs/promises'
import net from 'node:net'
import { socketPath } from './socket-path.js'

export class DataDirInUse extends Error {
  override name = 'DataDirInUse'
}

/**
 * The Unix socket a process listens on while it holds DATA_DIR. Only a live process answers on
 * it, whatever became of a process that held it before (killed, crashed, its pid reused since).
 */
export const lockSocket = (dataDir: string): string => socketPath(dataDir, 'server.lock')

/** What the process holding the socket says it is, or undefined when none answers. */
function holderOf (lock: string): Promise<string | undefined> {
  return new Promise(resolve => {
    let said = ''
    const socket = net.connect(lock)
    socket.on('data', chunk => { said += chunk })
    socket.on('end', () => resolve(said))
    socket.on('error', () => resolve(undefined))
  })
}

/**
 * Claims DATA_DIR for this process until it exits: a second server started on the same data
 * folder fails at once, instead of stopping the first one's embedded PostgreSQL on its way out.
 * `holder` says what this process is, for the message the next one gets.
 */
export async function claimDataDir (dataDir: string, holder: string): Promise<void> {
  const lock = lockSocket(dataDir)
  const inUse = (by: string) => new DataDirInUse(`The data folder ${dataDir} is in use by ${by}: stop it first, or set DATA_DIR to another folder`)
  const other = await holderOf(lock)
  if (other !== undefined) throw inUse(other)
  // Left by a process that is gone.
  await rm(lock, { force: true })
  await mkdir(dataDir, { recursive: true })
  const server = net.createServer(socket => socket.end(`${holder} (pid ${process.pid})`))
  await new Promise<void>((resolve, reject) => {
    /* c8 ignore start -- only when another process claims the folder between our look and our claim */
    server.once('error', error => {
      reject((error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? inUse('another process starting now') : error)
    })
    /* c8 ignore stop */
    server.listen(lock, resolve)
  })
  server.unref()
  process.once('exit', () => rmSync(lock, { force: true }))
}
