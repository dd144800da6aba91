import net from 'node:net'
import type { Test } from 'tap'
import type { DatabaseConfig } from '../../lib/process/config.js'

/**
 * A TCP proxy in front of a test database, to make it misbehave as a network or a server
 * does: `freeze` stops every byte both ways while the connections stay open (a hung server
 * or a partition), `thaw` lets them flow again.
 */
export interface DatabaseProxy {
  /** The connection settings that go through the proxy. */
  db: DatabaseConfig
  freeze: () => void
  thaw: () => void
  /**
   * The next message from the service holding `marker` (`COMMIT`) reaches the database, and
   * nothing of the database's answers on that connection reaches the service any more: the
   * service never learns that its transaction committed.
   */
  stallRepliesAfter: (marker: string) => void
  /** The database gone: every connection closed, and new ones refused. */
  close: () => Promise<void>
}

/** `port`: the one to listen on (a service may have been told it before the proxy is there); else any free one. */
export async function databaseProxy (t: Test, db: DatabaseConfig, { port = 0 } = {}): Promise<DatabaseProxy> {
  // A host starting with / is the folder of PostgreSQL's Unix socket.
  const target = db.host.startsWith('/') ? { path: `${db.host}/.s.PGSQL.${db.port}` } : { host: db.host, port: db.port }
  const sockets = new Set<net.Socket>()
  let frozen = false
  let stallMarker: string | undefined
  const hold = (socket: net.Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.on('error', () => socket.destroy())
    if (frozen) socket.pause()
  }
  const server = net.createServer(client => {
    const upstream = net.connect(target)
    hold(client)
    hold(upstream)
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk)
      if (stallMarker !== undefined && chunk.includes(stallMarker)) {
        stallMarker = undefined
        upstream.pause()
      }
    })
    upstream.on('data', chunk => client.write(chunk))
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
  })
  await new Promise<void>(resolve => server.listen(port, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const socket of sockets) socket.destroy()
    return new Promise<void>(resolve => server.close(() => resolve()))
  })
  return {
    db: { ...db, host: '127.0.0.1', port: (server.address() as net.AddressInfo).port },
    freeze () {
      frozen = true
      for (const socket of sockets) socket.pause()
    },
    thaw () {
      frozen = false
      for (const socket of sockets) socket.resume()
    },
    stallRepliesAfter (marker: string) {
      stallMarker = marker
    },
    close () {
      for (const socket of sockets) socket.destroy()
      return new Promise<void>(resolve => server.close(() => resolve()))
    }
  }
}
