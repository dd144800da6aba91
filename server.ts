import Fastify from 'fastify'
import app, { serverOptions } from './app.js'
import { ConfigError, loadConfig, type Config } from './lib/config.js'
import { EmbeddedPostgres } from './lib/embedded-postgres.js'

/** How long in-flight requests may take to finish after SIGTERM before the process gives up. */
const SHUTDOWN_GRACE_MS = 10_000

function readConfig (): Config {
  try {
    return loadConfig()
  } catch (error) {
    console.error(`Invalid configuration: ${(error as ConfigError).message}`)
    process.exit(1)
  }
}

const config = readConfig()
const embedded = config.db ? undefined : new EmbeddedPostgres(config.dataDir)
await embedded?.start()

const options = serverOptions(config)
const fastify = Fastify({
  ...options,
  // JSON lines for machines; readable lines only when a person watches a terminal.
  /* c8 ignore next 3 -- the tests read the JSON lines, never a terminal */
  logger: process.stdout.isTTY
    ? { ...options.logger as object, transport: { target: 'pino-pretty' } }
    : options.logger
})

if (embedded) fastify.log.info({ dataDir: config.dataDir }, 'using the embedded PostgreSQL')

let closing = false
async function shutdown (signal: string) {
  if (closing) return
  closing = true
  fastify.log.info({ signal }, 'shutting down: finishing in-flight requests')
  setTimeout(() => {
    fastify.log.error('in-flight requests did not finish in time')
    process.exit(1)
  }, SHUTDOWN_GRACE_MS).unref()
  await fastify.close()
  await embedded?.stop()
  process.exit(0)
}
process.on('SIGTERM', shutdown)
process.on('SIGINT', shutdown)

try {
  await fastify.register(app, { config })
  await fastify.listen({ port: config.port, host: config.host })
} catch (error) {
  fastify.log.fatal({ err: error }, 'could not start')
  await fastify.close()
  await embedded?.stop()
  process.exit(1)
}
