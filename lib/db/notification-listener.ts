import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'

/** The listening connection's application_name in pg_stat_activity. */
export const LISTENER_NAME = 'student-records-api listener'
/** Wait before listening again after the connection was lost. */
const RECONNECT_MS = 1_000
/** How often the listening connection proves it is alive; a silent one could miss notifications. */
const HEARTBEAT_MS = 5_000

/** What a channel's listener is told: each notification, and when listening starts and stops. */
export interface ChannelHandlers {
  notified: (payload: string) => void
  /** Listening (again): notifications from now on arrive. */
  listening: () => void
  /** The connection was lost: notifications may be missed until `listening` again. */
  lost: () => void
}

/**
 * One connection of its own, LISTENing on every channel asked for, for the whole process.
 * Lost, it tells each channel, and connects and listens again a second later. LISTEN needs a
 * session of its own: behind a transaction-mode pooler, PostgreSQL itself.
 */
export class NotificationListener {
  readonly #channels = new Map<string, ChannelHandlers>()
  #client: pg.Client | undefined
  #connecting: Promise<void> | undefined
  #reconnect: NodeJS.Timeout | undefined
  #heartbeat: NodeJS.Timeout | undefined
  #stopped = false

  private readonly connection: pg.ClientConfig
  private readonly log: FastifyBaseLogger

  constructor (connection: pg.ClientConfig, log: FastifyBaseLogger) {
    this.connection = connection
    this.log = log
  }

  /** Listens on `channel` from now on; resolves once listening, or once it failed (and will try again). */
  listen (channel: string, handlers: ChannelHandlers): Promise<void> {
    if (!/^[a-z_]+$/.test(channel)) throw new Error(`Not a channel name: ${channel}`)
    this.#channels.set(channel, handlers)
    // One step at a time: a connection under way listens on the channels known when it is up.
    return this.#next(async () => {
      const client = this.#client
      if (client === undefined) {
        // Lost: the next connection listens on this channel too.
        if (this.#reconnect === undefined && !this.#stopped) await this.#connect()
        return
      }
      try {
        await client.query(`listen ${channel}`)
        handlers.listening()
      /* c8 ignore start -- the connection dropped between its last statement and this one: the
         next connection, a second later, listens on this channel too */
      } catch (error) {
        this.#lost(client, error)
      }
      /* c8 ignore stop */
    })
  }

  #next (step: () => Promise<void>): Promise<void> {
    this.#connecting = (this.#connecting ?? Promise.resolve()).then(step)
    return this.#connecting
  }

  async #connect (): Promise<void> {
    const client = new pg.Client({ ...this.connection, application_name: LISTENER_NAME, query_timeout: 2_000 })
    this.#client = client
    // PostgreSQL sends every notification with a payload, '' when none was given.
    client.on('notification', message => this.#channels.get(message.channel)?.notified(message.payload as string))
    client.on('error', error => this.#lost(client, error))
    client.on('end', () => this.#lost(client))
    try {
      await client.connect()
      for (const channel of this.#channels.keys()) await client.query(`listen ${channel}`)
      /* c8 ignore next -- lost as its last LISTEN answered: not listening, whatever the queries said */
      if (client !== this.#client) return
      for (const handlers of this.#channels.values()) handlers.listening()
      this.#heartbeat = setInterval(() => {
        client.query('select 1').catch((error: unknown) => this.#lost(client, error))
      }, HEARTBEAT_MS).unref()
    } catch (error) {
      this.#lost(client, error)
    }
  }

  async stop (): Promise<void> {
    this.#stopped = true
    await this.#connecting
    clearTimeout(this.#reconnect)
    clearInterval(this.#heartbeat)
    const client = this.#client
    this.#client = undefined
    for (const handlers of this.#channels.values()) handlers.lost()
    await client?.end()
  }

  #lost (client: pg.Client, error?: unknown): void {
    if (client !== this.#client) return
    this.#client = undefined
    clearInterval(this.#heartbeat)
    for (const handlers of this.#channels.values()) handlers.lost()
    client.end().catch(() => {})
    if (this.#stopped) return
    this.log.warn({ err: error, channels: [...this.#channels.keys()] }, 'lost the connection listening for notifications; listening again in a second')
    this.#reconnect = setTimeout(() => {
      this.#reconnect = undefined
      void this.#next(() => this.#connect())
    }, RECONNECT_MS)
  }
}
