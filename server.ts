import cluster from 'node:cluster'
import { catchStopSignals } from './lib/process/stop-signals.js'
import { ConfigError, loadConfig, type LoadedConfig } from './lib/process/config.js'

// First of all, before the application's modules load: a SIGTERM or SIGINT at any moment of
// start-up stops the process cleanly.
const stopSignals = catchStopSignals()

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
  const { runPrimary } = await import('./lib/process/primary.js')
  // Each worker serves on for SHUTDOWN_DELAY and finishes its requests within SHUTDOWN_GRACE, as one process does; 2 s more to exit.
  const { shutdownDelay, shutdownGrace } = config.timeouts
  await runPrimary(config, shutdownDelay + shutdownGrace + 2_000, stopSignals)
} else {
  const { serve } = await import('./lib/process/serve.js')
  await serve(config, stopSignals)
}
