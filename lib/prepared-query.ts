import type { Knex } from 'knex'
import type pg from 'pg'

/**
 * A query of the hot paths: knex builds its SQL once, at startup, and every call runs it as
 * a named prepared statement on a connection of knex's pool, or of the transaction given.
 * Building the query and going through knex's runner on every request cost a fifth of the
 * service's CPU for a student GET by id (profiled with --cpu-prof under `npm run bench`).
 * Errors are pg's own, which do not carry the SQL text.
 */
export type PreparedQuery<Args extends unknown[], Row> = (args: Args, db?: Knex) => Promise<pg.QueryResult<Row & pg.QueryResultRow>>

// Stand-ins for the arguments while knex builds the query: numbers, since `limit()` takes no
// other, and far from any constant a query holds.
const FIRST_PLACEHOLDER = Number.MIN_SAFE_INTEGER

interface KnexClient {
  acquireConnection (): Promise<pg.Client>
  releaseConnection (connection: pg.Client): Promise<void>
}

/**
 * `build` receives one stand-in per argument and returns the query; `name` must be unique
 * to the SQL text, as PostgreSQL keeps it per connection.
 */
export function prepare<Args extends unknown[], Row> (
  knex: Knex,
  name: string,
  build: (...args: never[]) => Knex.QueryBuilder
): PreparedQuery<Args, Row> {
  const placeholders = Array.from({ length: build.length }, (_, i) => FIRST_PLACEHOLDER + i)
  const { sql, bindings } = build(...placeholders as never[]).toSQL().toNative()
  // For each binding: the index of the argument it stands for, or its constant value.
  const slots = bindings.map(value => {
    const arg = placeholders.indexOf(value as number)
    return arg >= 0 ? { arg } : { value }
  })
  const unused = placeholders.findIndex((_, i) => !slots.some(slot => slot.arg === i))
  if (unused >= 0) throw new Error(`The query ${name} does not use its argument ${unused}`)

  return async (args, db = knex) => {
    const values = slots.map(slot => slot.arg === undefined ? slot.value : args[slot.arg])
    // A transaction's client hands out the transaction's own connection and keeps it on release.
    const client = db.client as KnexClient
    const connection = await client.acquireConnection()
    try {
      return await connection.query<Row & pg.QueryResultRow>({ name, text: sql, values })
    } finally {
      await client.releaseConnection(connection)
    }
  }
}
