import fp from 'fastify-plugin'
import type { FastifyBaseLogger } from 'fastify'
import pg from 'pg'
import { CallerCache } from '../../lib/auth/caller-cache.js'
import { knexConfig } from '../../lib/db/knex-config.js'

declare module 'fastify' {
  interface FastifyInstance {
    callerCache: CallerCache
  }
}

/** The listening connection's application_name in pg_stat_activity. */
export const LISTENER_NAME = 'student-records-api auth_changed'
/** Wait before listening again after the connection was lost. */
const RECONNECT_MS = 1_000
/** How often the listening connection proves it is alive; a silent one could miss changes. */
const HEARTBEAT_MS = 5_000

/**
 * Keeps one connection of its own listening on `auth_changed` and feeds the cache. The cache
 * only works while that connection does: lost, the cache is disabled (every request asks the
 * database again) until the connection is back and listening.
 */
class ChangeListener {
  #client: pg.Client | undefined
  #listening: Promise<void> | undefined
  #reconnect: NodeJS.Timeout | undefined
  #heartbeat: NodeJS.Timeout | undefined

  constructor (
    private readonly connection: pg.ClientConfig,
    private readonly cache: CallerCache,
    private readonly log: FastifyBaseLogger
  ) {}

  /** Connects and listens; on failure, tries again later. Resolves either way. */
  listen (): Promise<void> {
    this.#listening = this.#connect()
    return this.#listening
  }

  async #connect (): Promise<void> {
    const client = new pg.Client({ ...this.connection, application_name: LISTENER_NAME, query_timeout: 2_000 })
    this.#client = client
    client.on('notification', message => this.cache.apply(String(message.payload)))
    client.on('error', error => this.#lost(client, error))
    client.on('end', () => this.#lost(client))
    try {
      await client.connect()
      await client.query('listen auth_changed')
      this.cache.enable()
      this.#heartbeat = setInterval(() => {
        client.query('select 1').catch((error: unknown) => this.#lost(client, error))
      }, HEARTBEAT_MS).unref()
    } catch (error) {
      this.#lost(client, error)
    }
  }

  async stop (): Promise<void> {
    await this.#listening
    clearTimeout(this.#reconnect)
    clearInterval(this.#heartbeat)
    const client = this.#client
    this.#client = undefined
    this.cache.disable()
    await client?.end()
  }

  #lost (client: pg.Client, error?: unknown): void {
    if (client !== this.#client) return
    this.#client = undefined
    this.cache.disable()
    clearInterval(this.#heartbeat)
    client.end().catch(() => {})
    this.log.warn({ err: error }, 'lost the auth_changed listener; every token is checked in the database until it is back')
    this.#reconnect = setTimeout(() => { void this.listen() }, RECONNECT_MS)
  }
}

/** `fastify.callerCache`, kept true by the database's `auth_changed` notifications. */
export default fp(async (fastify) => {
  const cache = new CallerCache(fastify.config.auth.cacheSize)
  fastify.decorate('callerCache', cache)
  if (fastify.config.auth.cacheSize === 0) return

  // LISTEN needs a session of its own: behind a transaction-mode pooler, PostgreSQL itself.
  const listener = new ChangeListener(knexConfig(fastify.config, { direct: true }).connection as pg.ClientConfig, cache, fastify.log)
  await listener.listen()
  fastify.addHook('onClose', () => listener.stop())
}, { name: 'caller-cache', dependencies: ['config', 'knex'] })
