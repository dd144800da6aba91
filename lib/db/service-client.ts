import { createRequire } from 'node:module'
import type { Knex } from 'knex'
import pg from 'pg'
import { endsSession, markConnectionFailure } from './db-errors.js'

type ConnectCallback = ((error: Error) => void) | ((error: null, client: pg.Client) => void)

/**
 * The service's pg client: its connection's failures are marked as such (lib/db/db-errors.ts),
 * so that the error handler answers them 503 by what they are, not by their text. pg fails a
 * connect, and every query of a connection that breaks, with the very error it emits.
 */
export class ServiceClient extends pg.Client {
  /** Whether its connection failed: pg refuses its queries from then on, with errors of no code. */
  #lost = false

  constructor (config?: string | pg.ClientConfig) {
    super(config)
    this.on('error', error => {
      this.#lost = true
      markConnectionFailure(error)
    })
    // An error that ends the session (a backend terminated under a running query) fails the
    // query before pg hears that the server closed the socket: knex would hand the connection
    // back as live, and the pool lend it to the next query. Marked so, knex's release has the
    // pool destroy it (knex's own mark, which it reads on a pool it is given; the prepared
    // queries release such a connection with its error: lib/db/prepared-query.ts). pg's
    // connection emits each error message of the server as `errorMessage`, before the query
    // hears of it.
    this.connection.on('errorMessage', (message: unknown) => {
      if (endsSession(message)) (this as { __knex__disposed?: unknown }).__knex__disposed = message
    })
  }

  // A query on a client whose connection failed (knex's ROLLBACK after the failure) fails too,
  // and its error says so.
  override query (config: unknown, values?: unknown, callback?: unknown): any {
    if (!this.#lost) return (super.query as (...args: unknown[]) => unknown)(config, values, callback)
    return lostQuery(this, super.query, config, values, callback)
  }

  override connect (): Promise<pg.Client>
  override connect (callback: ConnectCallback): void
  override connect (callback?: ConnectCallback): Promise<pg.Client> | void {
    if (callback === undefined) return super.connect().catch((error: unknown) => { throw markConnectionFailure(error) })
    // pg calls back with the error alone when it failed, and with null and the client when connected.
    super.connect((error: Error | null, client?: pg.Client) => {
      (callback as (error: Error | null, client?: pg.Client) => void)(markConnectionFailure(error), client)
    })
  }
}

type Callback = (error: Error | null, result?: unknown) => void
interface Submittable { submit: unknown, handleError: (error: Error, connection: unknown) => void }

/** Runs a query of a client whose connection failed, its error marked, in each of pg's forms. */
function lostQuery (client: pg.Client, query: (...args: unknown[]) => unknown, config: unknown, values: unknown, callback: unknown): unknown {
  const submittable = config as Partial<Submittable>
  if (typeof submittable.submit === 'function') {
    const handleError = submittable.handleError!
    submittable.handleError = (error, connection) => handleError.call(submittable, markConnectionFailure(error), connection)
    return query.call(client, config)
  }
  const last = (typeof values === 'function' ? values : callback) as Callback | undefined
  if (last !== undefined) {
    return query.call(client, config, typeof values === 'function' ? undefined : values, (error: Error | null, result?: unknown) => last(markConnectionFailure(error), result))
  }
  return (query.call(client, config, values) as Promise<unknown>).catch((error: unknown) => { throw markConnectionFailure(error) })
}

type PoolConnectCallback = (error: Error | undefined, client: pg.PoolClient | undefined, done: (release?: unknown) => void) => void

/** pg's pool, whose failures to lend a connection in time (DB_ACQUIRE_TIMEOUT) are marked too. */
export class ServicePool extends pg.Pool {
  override connect (): Promise<pg.PoolClient>
  override connect (callback: PoolConnectCallback): void
  override connect (callback?: PoolConnectCallback): Promise<pg.PoolClient> | void {
    if (callback === undefined) return super.connect().catch((error: unknown) => { throw markConnectionFailure(error) })
    super.connect((error, client, done) => { callback(markConnectionFailure(error), client, done) })
  }
}

// knex's own PostgreSQL client, the one `client: 'pg'` names (knex exports no path to it).
const PgDialect = createRequire(import.meta.url)('knex/lib/dialects/postgres/index.js') as typeof Knex.Client

/** knex's PostgreSQL client, whose connections are made with the given pg client class. */
export function knexClientOf (Client: typeof pg.Client): typeof Knex.Client {
  return class extends PgDialect {
    override initializeDriver (): void {
      super.initializeDriver()
      this.driver = Object.create(this.driver as object, { Client: { value: Client } })
    }
  }
}

/** knex's PostgreSQL client on ServiceClients. */
export const ServiceKnexClient = knexClientOf(ServiceClient)
