import type pg from 'pg'
import { databaseUnavailable } from './db-errors.js'
import { ServiceClient } from './service-client.js'

/** Between two tries to connect. */
const RETRY_MS = 1_000

/**
 * Whether PostgreSQL answered, and said no for a reason no wait mends: an SQLSTATE (five
 * characters, where node's socket errors are E… words) outside the classes of a server out of
 * reach or starting up (08, 53, 57P01–57P03). Asked of the code alone, as the client marks
 * every failure of its connect as the connection's (lib/db/db-errors.ts).
 */
function answeredNo (error: unknown): boolean {
  const { code } = error as { code?: unknown }
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) && !databaseUnavailable({ code })
}

/** Where each try that failed is told (the service's logger, or the console of a command). */
export interface WaitLogger {
  warn: (fields: object, message: string) => void
}

/** A command's (`npm run migrate`, `seed`): each try's message on stderr. */
export const consoleWaitLogger: WaitLogger = { warn: (_fields, message) => console.error(message) }

/**
 * Returns once PostgreSQL takes a connection, trying again every second while it is out of
 * reach (refused, not answering, its name not yet known, starting up), for at most `wait` ms
 * (DB_STARTUP_WAIT): a database started alongside the service (compose, a pod beside it) may
 * answer seconds after the service starts. Each failed try is logged. An error that trying
 * again would not mend (a wrong password, no such database) is thrown at once.
 */
export async function waitForDatabase (connection: pg.ClientConfig, wait: number, log: WaitLogger): Promise<void> {
  const started = Date.now()
  for (;;) {
    const client = new ServiceClient(connection)
    try {
      await client.connect()
      await client.end()
      return
    } catch (error) {
      if (answeredNo(error)) throw error
      const waited = Date.now() - started
      if (waited >= wait) {
        throw new Error(`The database did not answer within DB_STARTUP_WAIT (${wait} ms): ${(error as Error).message}`, { cause: error })
      }
      const delay = Math.min(RETRY_MS, wait - waited)
      log.warn({ err: error, waitedMs: waited, retryInMs: delay, waitMs: wait },
        `the database does not answer yet (${(error as Error).message}); trying again in ${delay} ms, for up to DB_STARTUP_WAIT (${wait} ms) in all`)
      await new Promise(resolve => setTimeout(resolve, delay))
    }
  }
}
