import cluster from 'node:cluster'
import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import app, { serverOptions } from './app.js'
import { ConfigError, listeningOrigin, loadConfig, type LoadedConfig } from './lib/process/config.js'
import { withJwtSecret } from './lib/process/jwt-secret.js'
import { claimDataDir } from './lib/db/data-dir-lock.js'
import { EmbeddedPostgres } from './lib/db/embedded-postgres.js'
import { forTerminal, logProcessWarnings } from './lib/process/logging.js'
import { drainConnections } from './lib/process/drain.js'
import { runPrimary } from './lib/process/primary.js'

function readConfig (): LoadedConfig {
  try {
    return loadConfig()
  } catch (error) {
    console.error(`Invalid configuration: ${(error as ConfigError).message}`)
    process.exit(1)
  }
}

const config = readConfig()
// With WORKERS > 1 this process only starts the embedded PostgreSQL and keeps the workers
// running; each worker is a whole server, listening on the same port.
if (cluster.isPrimary && config.workers > 1) {
  await runPrimary(config, config.timeouts.shutdownGrace + 2_000)
} else {
  await serve(config, cluster.isPrimary && !config.db ? new EmbeddedPostgres(config.dataDir) : undefined)
}

/** One server: listens until SIGTERM or SIGINT, then finishes the requests in flight. */
async function serve (config: LoadedConfig, embedded: EmbeddedPostgres | undefined) {
  const options = serverOptions(config)
  const fastify = Fastify({ ...options, logger: forTerminal(options.logger as object) })
  logProcessWarnings(fastify.log)

  if (embedded) {
    try {
      await claimDataDir(config.dataDir, 'another server')
      await embedded.start()
    } catch (error) {
      fastify.log.fatal({ err: error }, 'could not start')
      process.exit(1)
    }
    fastify.log.info({ dataDir: config.dataDir }, 'using the embedded PostgreSQL')
  }
  // Killed or crashed under the service, the embedded PostgreSQL is started again; if it
  // cannot be, the process exits for its supervisor (or the user) to start it afresh.
  const stopWatching = embedded?.keepRunning(fastify.log, error => {
    fastify.log.fatal({ err: error }, 'the embedded PostgreSQL could not be started again: exiting')
    process.exit(1)
  })

  let closing = false
  /**
   * SIGTERM: /health/ready answers 503 at once and every answer closes its connection, while
   * the service serves on for SHUTDOWN_DELAY, until balancers have seen it and stopped sending;
   * then it stops listening, lets the connections in use finish their requests and close, and
   * closes the idle ones (lib/process/drain.ts), all within SHUTDOWN_GRACE.
   */
  async function shutdown (signal: string) {
    if (closing) return
    closing = true
    // First of all: a PostgreSQL stopped from now on (a supervisor stopping the whole service,
    // or embedded.stop() below) is not started again.
    const watchStopped = stopWatching?.()
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
  process.on('SIGTERM', shutdown)
  process.on('SIGINT', shutdown)

  try {
    // Once DATA_DIR is this process's (or, in a worker, once the primary has made it).
    await fastify.register(app, { config: withJwtSecret(config) })
    await fastify.listen({ port: config.port, host: config.host })
    const { port } = fastify.server.address() as AddressInfo
    const origin = listeningOrigin(config.host, port)
    fastify.log.info({ url: origin, documentation: `${origin}/documentation` }, `serving at ${origin}; the API documentation is at ${origin}/documentation`)
    if (fastify.metrics.address) {
      const metrics = `${listeningOrigin(config.metrics!.host, fastify.metrics.address.port)}/metrics`
      fastify.log.info({ metrics }, `serving the metrics at ${metrics}`)
    }
  } catch (error) {
    fastify.log.fatal({ err: error }, 'could not start')
    await stopWatching?.()
    await fastify.close()
    await embedded?.stop()
    process.exit(1)
  }
}
