import type http from 'node:http'
import net from 'node:net'

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))
const openConnections = (server: net.Server) => new Promise<number>((resolve, reject) => {
  /* c8 ignore next -- an error is for servers sharing connections with child processes, which this one does not */
  server.getConnections((error, count) => error ? reject(error) : resolve(count))
})

/**
 * Stops taking connections and waits until the open ones have closed, without closing one
 * under a client that is sending on it. Every answer from now on must close its connection
 * (`Connection: close`; plugins/app/shutting-down.ts): a connection in use closes after its
 * next answer, and its client knows not to send on it again. A connection idle all along
 * is closed once it has been idle for `idleMs`, when a client is least likely to pick it up.
 *
 * http.Server's own `close` closes every idle keep-alive connection at once, and a client that
 * was just then sending a request on one sees it reset with no answer: it cannot tell whether
 * its request was done. net.Server's `close` stops listening only.
 */
export async function drainConnections (server: http.Server, idleMs = 1_000): Promise<void> {
  net.Server.prototype.close.call(server)
  await sleep(idleMs)
  while (await openConnections(server) > 0) {
    // What is idle now has been since before the drain began: every answer since closed its connection.
    server.closeIdleConnections()
    await sleep(50)
  }
}
