import path from 'node:path'
import AutoLoad, { type AutoloadPluginOptions } from '@fastify/autoload'
import fp from 'fastify-plugin'
import type { ValidatorFactory } from '@fastify/ajv-compiler'
import { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify'
import type { AppOptions, LoadedConfig } from './lib/process/config.js'
import { buildValidator } from './lib/http/validation.js'
import { buildSerializer } from './lib/http/serialization.js'
import { parseQueryString } from './lib/http/query-string.js'
import { requestId } from './lib/http/request-id.js'
import { clientErrorHandler, frameworkErrors } from './plugins/app/errors.js'

export type { AppOptions }

/**
 * The server options of the application. server.ts and the tests build the app with
 * these same options, so the tests exercise the real validation and limits.
 */
export function serverOptions (config: LoadedConfig): FastifyServerOptions {
  return {
    logger: {
      level: config.logLevel,
      redact: ['req.headers.authorization', 'req.headers.cookie']
    },
    // Errors are logged, not every request (plugins/app/request-log.ts).
    logController: new LogController({ disableRequestLogging: true }),
    // Each log line of a request carries its id, the caller's X-Request-Id or a new one.
    genReqId: requestId,
    // request.ip: the client's address as the trusted proxies forwarded it (X-Forwarded-For),
    // or the connection's; the per-IP limits, sessions and the audit log use it.
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
    bodyLimit: 32 * 1024,
    requestTimeout: config.timeouts.request,
    connectionTimeout: config.timeouts.request,
    keepAliveTimeout: config.timeouts.keepAlive,
    // plugins/app/load-shedding.ts answers requests that arrive while closing, in the error body.
    return503OnClosing: false,
    // Start-up waits on the database only, each wait bounded: for one that does not answer yet
    // by DB_STARTUP_WAIT (60 s), for another instance's migration by DB_STATEMENT_TIMEOUT. Fastify's own 10 s for loading the
    // plugins failed instances that waited for a migration, and workers that a busy machine
    // loaded slowly; at start-up, one worker that fails stops them all.
    pluginTimeout: 0,
    forceCloseConnections: 'idle',
    // ajv-compiler's factory type only knows its own ajv; ours returns Fastify's validator contract.
    schemaController: { compilersFactory: { buildValidator: buildValidator as unknown as ValidatorFactory, buildSerializer } },
    // Filters arrive in OpenAPI's deepObject style: `age[gte]=18`.
    routerOptions: { ignoreTrailingSlash: true, querystringParser: parseQueryString },
    // What never reaches a route is answered in the error body too.
    frameworkErrors,
    clientErrorHandler
  }
}

/**
 * The application as one plugin, in three passes: the libraries, what every route shares, the
 * routes. Autoload registers each plugin of a folder after the ones its `dependencies` name.
 *
 * The onRequest hooks of every request run in the order their plugins were registered, and a
 * client can tell that order apart; each of these names the one before it as a dependency:
 *   request-log       X-Request-Id, on every answer, even a refusal by the hooks after it
 *   security-headers  the same for the security headers
 *   metrics           the request counted in flight
 *   cors              a preflight answered, or refused in the error body
 *   load-shedding     503 while overloaded or closing, with the headers above, CORS's included
 *   request-timing    HANDLER_TIMEOUT's clock, for the requests that get this far
 *   tracing           the request's span
 */
async function app (fastify: FastifyInstance, opts: AppOptions) {
  // Libraries, each wrapped with its settings: they depend on nothing of the application's.
  await fastify.register(AutoLoad, { dir: path.join(import.meta.dirname, 'plugins', 'external'), options: opts })
  // What every route shares: the configuration, the error body, the token check, the write path…
  await fastify.register(AutoLoad, { dir: path.join(import.meta.dirname, 'plugins', 'app'), options: opts })
  await fastify.register(AutoLoad, routesFolder(path.join(import.meta.dirname, 'routes'), opts))
}

/**
 * How a folder of routes is loaded: each folder is a URL prefix, except folders in parentheses,
 * which group routes (and their `_autohooks.ts`): (public), (authenticated). A test mounts a
 * resource of its own the same way (docs/adding-a-resource.md).
 */
export function routesFolder (dir: string, opts: AppOptions): AutoloadPluginOptions {
  return {
    dir,
    options: opts,
    dirNameRoutePrefix: (_parent: string, folder: string) => folder.startsWith('(') ? '' : folder,
    autoHooks: true,
    cascadeHooks: true
  }
}

// Not encapsulated, so that the tests reach the decorators (fastify.knex, ...) too.
export default fp(app, { name: 'app' })
