// Writes openapi.json: the OpenAPI document the service serves, built from the route
// schemas. The app needs its database to start, so this uses the configured one, or the
// embedded PostgreSQL (stopped again if this script started it).
import { writeFile } from 'node:fs/promises'
import Fastify from 'fastify'
import app, { serverOptions } from '../app.js'
import { loadConfig } from '../lib/process/config.js'
import { withJwtSecret } from '../lib/process/jwt-secret.js'
import { EmbeddedPostgres } from '../lib/db/embedded-postgres.js'

// No metrics listener: it would contend with a running service's for METRICS_PORT.
const config = { ...withJwtSecret(loadConfig()), logLevel: 'warn' as const, metrics: null }
const embedded = config.db ? undefined : new EmbeddedPostgres(config.dataDir)
const started = await embedded?.start()
try {
  const fastify = Fastify(serverOptions(config))
  await fastify.register(app, { config })
  await fastify.ready()
  await writeFile(new URL('../openapi.json', import.meta.url), JSON.stringify(fastify.swagger(), null, 2) + '\n')
  await fastify.close()
} finally {
  if (started) await embedded?.stop()
}
