import cluster, { type Worker } from 'node:cluster'
import type { Server } from 'node:http'
import { pino } from 'pino'
import { AggregatorRegistry } from 'prom-client'
import { listeningOrigin, type LoadedConfig } from './config.js'
import { claimDataDir } from '../db/data-dir-lock.js'
import { EmbeddedPostgres } from '../db/embedded-postgres.js'
import { withJwtSecret } from './jwt-secret.js'
import { forTerminal, logProcessWarnings } from './logging.js'
import { boundAddress, closeMetrics, serveMetrics } from './metrics-server.js'
import type { StopSignals } from './stop-signals.js'

/** Wait before replacing a worker that died, so that one failing at once does not spin. */
const RESTART_DELAY_MS = 1_000

/**
 * The primary process of WORKERS > 1: starts the embedded PostgreSQL (when no DB_HOST is
 * given), forks the workers, replaces any that dies, and on SIGTERM or SIGINT lets every
 * worker finish its requests in flight before it stops the database and exits. It serves the
 * metrics listener (METRICS_PORT): the workers' metrics, summed (plugins/app/metrics.ts).
 * `graceMs`: how long the workers have to stop (SHUTDOWN_DELAY and SHUTDOWN_GRACE, and time to
 * exit); a worker past it is killed, and the primary exits 1. A signal during the primary's own
 * start-up stops it once it has started.
 */
export async function runPrimary (config: LoadedConfig, graceMs: number, stopSignals: StopSignals): Promise<void> {
  const log = pino(forTerminal({ level: config.logLevel, base: { pid: process.pid, role: 'primary' } }))
  logProcessWarnings(log)
  // First, as it is the quickest to fail (a port taken).
  let metrics: Server | undefined
  if (config.metrics) {
    const aggregator = new AggregatorRegistry()
    /* c8 ignore next -- a worker that does not answer within prom-client's 5 s (stopped, or stuck) */
    const failed = (error: unknown) => log.error({ err: error }, 'could not collect the workers\' metrics')
    try {
      metrics = await serveMetrics(config.metrics, { contentType: aggregator.contentType, text: () => aggregator.clusterMetrics() }, failed)
      const url = `${listeningOrigin(config.metrics.host, boundAddress(metrics).port)}/metrics`
      log.info({ metrics: url }, `serving the workers' metrics at ${url}`)
    } catch (error) {
      log.fatal({ err: error }, 'could not start')
      process.exit(1)
    }
  }

  const embedded = config.db ? undefined : new EmbeddedPostgres(config.dataDir)
  if (embedded) {
    try {
      await claimDataDir(config.dataDir, 'another server')
      await embedded.start()
      // Before the workers start, so that they all read this one.
      withJwtSecret(config)
    } catch (error) {
      log.fatal({ err: error }, 'could not start')
      process.exit(1)
    }
    log.info({ dataDir: config.dataDir }, 'using the embedded PostgreSQL')
  }

  const workers = new Set<Worker>()
  const restarts = new Set<NodeJS.Timeout>()
  let started = false
  let stopping = false
  let failed = false
  // As server.ts does with one process: the embedded PostgreSQL killed is started again, or all stop.
  const stopWatching = embedded?.keepRunning(log, error => {
    log.fatal({ err: error }, 'the embedded PostgreSQL could not be started again: exiting')
    failed = true
    void stop('the embedded PostgreSQL could not be started again')
  })
  let allExited!: () => void
  const exited = new Promise<void>(resolve => { allExited = resolve })

  const fork = () => {
    const worker = cluster.fork()
    workers.add(worker)
    worker.once('listening', () => { started = true })
  }

  cluster.on('exit', (worker, code, signal) => {
    workers.delete(worker)
    if (stopping) {
      // A worker still loading when told to stop ends by the signal itself, having served
      // nothing: the primary's SIGTERM, or a Ctrl-C's SIGINT, which reaches the whole group.
      if (code !== 0 && signal !== 'SIGTERM' && signal !== 'SIGINT') {
        log.error({ worker: worker.process.pid, code, signal }, 'a worker did not stop cleanly')
        failed = true
      }
      if (workers.size === 0) allExited()
    } else if (!started) {
      log.fatal({ code }, 'a worker could not start')
      failed = true
      void stop('start failure')
    } else {
      log.error({ worker: worker.process.pid, code, signal }, 'a worker stopped; starting another')
      const restart = setTimeout(() => { restarts.delete(restart); fork() }, RESTART_DELAY_MS)
      restarts.add(restart)
    }
  })

  async function stop (reason: string) {
    /* c8 ignore next -- a stop signal after a worker's start failure has begun the stop */
    if (stopping) return
    stopping = true
    // First of all, as in server.ts: a PostgreSQL stopped from now on is not started again.
    const watchStopped = stopWatching?.()
    // A worker still starting stops too: it ends its start-up (lib/process/serve.ts).
    log.info({ reason, workers: workers.size, cancelledRestarts: restarts.size }, 'shutting down: the workers finish their in-flight requests')
    for (const restart of restarts) clearTimeout(restart)
    restarts.clear()
    setTimeout(() => {
      log.error('the workers did not stop in time')
      for (const worker of workers) worker.process.kill('SIGKILL')
      process.exit(1)
    }, graceMs).unref()
    for (const worker of workers) worker.process.kill('SIGTERM')
    if (workers.size > 0) await exited
    if (metrics) await closeMetrics(metrics)
    await watchStopped
    await embedded?.stop()
    process.exit(failed ? 1 : 0)
  }
  for (let i = 0; i < config.workers; i++) fork()
  // After the forks: a signal that came during the primary's own start-up stops these at once.
  stopSignals.onStop(signal => { void stop(signal) })
}
