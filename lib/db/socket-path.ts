import { createHash } from 'node:crypto'
import os from 'node:os'
import path from 'node:path'

/** What a Unix socket's path may hold, in bytes (108 on Linux, 104 on macOS, with room to spare). */
const SOCKET_PATH_MAX = 100

/**
 * Where a Unix socket of DATA_DIR goes (the folder lock's, the embedded PostgreSQL's folder of
 * sockets): `name` inside DATA_DIR, so that the service writes nowhere else (a container with a
 * read-only root has only its data volume); or, where that path and the `tail` to be put under it
 * would pass what a socket's path may hold, the system's temporary folder, under a name made
 * from DATA_DIR.
 */
export function socketPath (dataDir: string, name: string, tail = ''): string {
  const folder = path.resolve(dataDir)
  const inside = path.join(folder, name)
  if (Buffer.byteLength(inside + tail) <= SOCKET_PATH_MAX) return inside
  const tag = createHash('sha256').update(folder).digest('hex').slice(0, 12)
  return path.join(os.tmpdir(), `student-records-${tag}-${name}`)
}
