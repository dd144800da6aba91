import type { Knex } from 'knex'
import type pg from 'pg'
import { rowBuilder, TEXT_VALUES } from './row-builder.js'

/**
 * A query of the hot paths: knex builds its SQL once, at startup, and every call runs it as
 * a named prepared statement on a plain `pg` pool, or on the connection of the transaction
 * given. Building the query and going through knex's runner on every request cost about 20
 * of the 170 µs of CPU a student GET by id took; knex's pool under 50 concurrent requests kept
 * result rows alive long enough to be promoted (a page of 100: 864 → 762 µs of CPU a request,
 * peak RSS 207 → 131 MB). Errors are pg's own, which do not carry the SQL text.
 */
export type PreparedQuery<Args extends unknown[], Row> = (args: Args, trx?: Knex) => Promise<pg.QueryResult<Row & pg.QueryResultRow>>

/** knex, for building queries and for transactions, and the pool the prepared queries run on. */
export interface Database {
  knex: Knex
  pool: pg.Pool
}

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
  { knex, pool }: Database,
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

  // Rows come as arrays of text, made into objects by a function for this query's columns.
  let toRow: ((values: (string | null)[]) => Row) | undefined
  const withRows = (result: pg.QueryArrayResult<(string | null)[]>) => {
    toRow ??= rowBuilder<Row>(result.fields)
    const objects = result as pg.QueryResult
    objects.rows = result.rows.map(toRow)
    return objects as pg.QueryResult<Row & pg.QueryResultRow>
  }
  return async (args, trx) => {
    const values = slots.map(slot => slot.arg === undefined ? slot.value : args[slot.arg])
    const query = { name, text: sql, values, rowMode: 'array' as const, types: TEXT_VALUES }
    if (trx === undefined || trx === knex) return withRows(await pool.query(query))
    // A transaction's client hands out the transaction's own connection and keeps it on release.
    const client = trx.client as KnexClient
    const connection = await client.acquireConnection()
    try {
      return withRows(await connection.query(query))
    } finally {
      await client.releaseConnection(connection)
    }
  }
}
