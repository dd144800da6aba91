import pg from 'pg'
import { SESSION_SETTINGS } from './pg-types.js'
import { knexClientOf, ServiceClient } from './service-client.js'

type StartupParameters = Record<string, string>

/**
 * pg's client builds its startup message in `getStartupConf`, a method its documentation does
 * not name: package.json pins pg to the minor range this was tested with, and this fails at
 * start-up on a pg without it.
 */
const pgStartup = (pg.Client.prototype as unknown as { getStartupConf?: () => StartupParameters }).getStartupConf
/* c8 ignore next 3 -- a pg without it: package.json pins one with it */
if (typeof pgStartup !== 'function') {
  throw new Error('This version of pg\'s client lacks getStartupConf, which lib/db/pooled-client.ts uses: install the pg version package.json pins')
}

/**
 * A connection through a transaction-mode pooler such as PgBouncer. The pooler refuses the
 * startup parameters it does not know (`options`, `statement_timeout`), and hands each
 * transaction whichever server connection is free, so a session's settings and named
 * prepared statements do not follow the client. What it does carry over are the parameters it
 * tracks: TimeZone and DateStyle, sent here as startup parameters of their own, are set again
 * on every server connection the client is given. Statements on such a client are sent
 * unnamed (lib/db/statement-query.ts).
 */
export class PooledClient extends ServiceClient {
  getStartupConf (): StartupParameters {
    return { ...pgStartup!.call(this), ...SESSION_SETTINGS }
  }
}

/** knex's PostgreSQL client, whose connections are PooledClients: knex makes them with its driver's `Client`. */
export const PooledKnexClient = knexClientOf(PooledClient)
