import cluster from 'node:cluster'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import app, { serverOptions } from '../../app.js'
import { claimDataDir } from '../db/data-dir-lock.js'
import { EmbeddedPostgres } from '../db/embedded-postgres.js'
import { listeningOrigin, type LoadedConfig } from './config.js'
import { drainConnections } from './drain.js'
import { withJwtSecret } from './jwt-secret.js'
import { forTerminal, logProcessWarnings } from './logging.js'
import type { StopSignal, StopSignals } from './stop-signals.js'

/**
 * One server (WORKERS=1, or a worker): listens until SIGTERM or SIGINT, then finishes the
 * requests in flight. Without DB_HOST, a process of its own starts the embedded PostgreSQL
 * (a worker's primary does).
 */
export async function serve (config: LoadedConfig, stopSignals: StopSignals): Promise<void> {
  const embedded = cluster.isPrimary && !config.db ? new EmbeddedPostgres(config.dataDir) : undefined
  const options = serverOptions(config)
  const fastify = Fastify({ ...options, logger: forTerminal(options.logger as object) })
  logProcessWarnings(fastify.log)

  let listening = false
  let closing = false
  // Stops the embedded PostgreSQL's watch, once there is one (kept running below).
  let stopWatching = async (): Promise<void> => {}
  // Settled once the embedded PostgreSQL has started or failed to: only then can it be stopped.
  let embeddedStarted: Promise<unknown> = Promise.resolve()
  // Whether DATA_DIR is this process's: a PostgreSQL running there is another server's until then.
  let dataDirClaimed = false

  /**
   * SIGTERM: /health/ready answers 503 at once and every answer closes its connection, while
   * the service serves on for SHUTDOWN_DELAY, until balancers have seen it and stopped sending;
   * then it stops listening, lets the connections in use finish their requests and close, and
   * closes the idle ones (lib/process/drain.ts), all within SHUTDOWN_GRACE.
   *
   * During start-up nothing is served yet: start-up is left where it is (a migration under way
   * is rolled back with its connection, and done at the next start), the embedded PostgreSQL
   * is stopped, and the process exits 0.
   */
  async function shutdown (signal: StopSignal) {
    closing = true
    if (!listening) {
      fastify.log.info({ signal }, 'shutting down during start-up: nothing is served yet')
      // Start-up goes on meanwhile, as nothing stops it: what it says as its database goes
      // (the wait for one that does not answer, say) would be noise after this line.
      fastify.log.level = 'silent'
      await embeddedStarted
      await stopWatching()
      if (dataDirClaimed) await embedded?.stop()
      process.exit(0)
    }
    // First of all: a PostgreSQL stopped from now on (a supervisor stopping the whole service,
    // or embedded.stop() below) is not started again.
    const watchStopped = stopWatching()
    const { shutdownDelay, shutdownGrace } = config.timeouts
    fastify.shuttingDown = true
    fastify.log.info({ signal, shutdownDelay }, 'shutting down: /health/ready answers 503; serving on for SHUTDOWN_DELAY')
    await new Promise(resolve => setTimeout(resolve, shutdownDelay))
    fastify.log.info('shutting down: finishing in-flight requests')
    setTimeout(() => {
      fastify.log.error('in-flight requests did not finish in time')
      process.exit(1)
    }, shutdownGrace).unref()
    await drainConnections(fastify.server)
    await fastify.close()
    await watchStopped
    await embedded?.stop()
    process.exit(0)
  }
  stopSignals.onStop(signal => { void shutdown(signal) })

  if (embedded) {
    /* c8 ignore next -- a signal while the modules loaded: the shutdown under way must find nothing started */
    if (closing) return
    const starting = claimDataDir(config.dataDir, 'another server').then(() => {
      dataDirClaimed = true
      return embedded.start()
    })
    embeddedStarted = starting.catch(() => {})
    try {
      await starting
    } catch (error) {
      fastify.log.fatal({ err: error }, 'could not start')
      process.exit(1)
    }
    // Stopped meanwhile: the shutdown stops it.
    if (closing) return
    fastify.log.info({ dataDir: config.dataDir }, 'using the embedded PostgreSQL')
    // Killed or crashed under the service, the embedded PostgreSQL is started again; if it
    // cannot be, the process exits for its supervisor (or the user) to start it afresh.
    stopWatching = embedded.keepRunning(fastify.log, error => {
      fastify.log.fatal({ err: error }, 'the embedded PostgreSQL could not be started again: exiting')
      process.exit(1)
    })
  }

  try {
    // Once DATA_DIR is this process's (or, in a worker, once the primary has made it).
    await fastify.register(app, { config: withJwtSecret(config) })
    await fastify.listen({ port: config.port, host: config.host })
  } catch (error) {
    /* c8 ignore next -- stopped meanwhile, its database with it (the embedded one): the shutdown exits */
    if (closing) return
    fastify.log.fatal({ err: error }, 'could not start')
    await stopWatching()
    await fastify.close()
    await embedded?.stop()
    process.exit(1)
  }
  /* c8 ignore next -- stopped while it began to listen: the shutdown exits */
  if (closing) return
  listening = true
  const { port } = fastify.server.address() as AddressInfo
  const origin = listeningOrigin(config.host, port)
  fastify.log.info({ url: origin, documentation: `${origin}/documentation` }, `serving at ${origin}; the API documentation is at ${origin}/documentation`)
  if (fastify.metrics.address) {
    const metrics = `${listeningOrigin(config.metrics!.host, fastify.metrics.address.port)}/metrics`
    fastify.log.info({ metrics }, `serving the metrics at ${metrics}`)
  }
}
