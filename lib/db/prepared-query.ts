import { createHash } from 'node:crypto'
import type { Knex } from 'knex'
import type pg from 'pg'
import { endsSession } from './db-errors.js'
import { Statement, type RowMaker, type Scalar, type StatementResult } from './statement-query.js'

/**
 * A query of the hot paths: knex builds its SQL once, at startup, and every call runs it as
 * a named prepared statement on the process's `pg` pool (which knex runs on too), or on the
 * connection of the transaction given: building the query and going through knex's runner on
 * every request cost CPU and memory on the hot paths (docs/performance.md). Errors are pg's
 * own, which do not carry the SQL text.
 */
export interface PreparedQuery<Args extends Scalar[], Row> {
  (args: Args, trx?: Knex): Promise<StatementResult<Row>>
  /** Its SQL, whose parameters are `$1`…`$n`, for a statement made around it. */
  readonly text: string
  /** The values of those parameters for these arguments. */
  values: (args: Args) => Scalar[]
  /** What makes its rows, for a statement made around it that returns the same ones. */
  readonly makeRow: RowMaker<Row> | undefined
  /** The pool it runs on, as a statement made around it does. */
  readonly pool: pg.Pool
}

/**
 * A write that rides in an INSERT's own statement: a CTE reading `created`, the INSERT's rows,
 * such as the audit entry of a create (plugins/app/audit.ts) or a kept Idempotency-Key
 * (plugins/app/idempotency.ts). Both commit with the INSERT, or neither does. `created` may
 * be a SELECT of a function that writes (a login's `start_session`): it runs once.
 */
export interface CteWrite {
  /** Tells its SQL apart from other CTE writes': the same name, the same SQL. */
  name: string
  /** The CTE, `name as (…)`, its parameters numbered from `$first`; its text is the same for every request. */
  cte: (first: number) => string
  values: Scalar[]
}

/**
 * A write that is one prepared statement returning its row, such as an INSERT … RETURNING:
 * the query, its arguments, and what a failure of it means to the caller (a unique conflict
 * becomes a 409). plugins/app/idempotency.ts keeps a key in that same statement.
 */
export interface Insertion<Row, Args extends Scalar[] = Scalar[]> {
  query: PreparedQuery<Args, Row>
  args: Args
  failure: (error: unknown) => unknown
  /** What is written in the same statement. */
  cteWrites: CteWrite[]
}

/** An insertion of this query with these arguments; `failure` tells what its errors mean (by default, themselves). */
export function insertion<Args extends Scalar[], Row> (query: PreparedQuery<Args, Row>, args: Args, failure = (error: unknown) => error): Insertion<Row, Args> {
  return { query, args, failure, cteWrites: [] }
}

// The statements of INSERTs with CTE writes, by INSERT and by the CTE writes' SQL.
const composedStatements = new WeakMap<object, Map<string, Statement<unknown>>>()

/**
 * The statement that runs the insertion's INSERT and its CTE writes, and these ones too, and
 * its values: `with created as (INSERT … RETURNING …), <CTE write>, … select * from created`.
 * Made once for each INSERT and names of CTE writes, and named after a digest of its text.
 */
export function composed<Row, Args extends Scalar[]> ({ query, args, cteWrites }: Insertion<Row, Args>, more: CteWrite[] = []): { statement: Statement<Row>, values: Scalar[] } {
  const all = more.length === 0 ? cteWrites : [...cteWrites, ...more]
  const values = query.values(args)
  // The CTE writes' parameters follow the INSERT's own.
  const first = values.length + 1
  for (const cteWrite of all) values.push(...cteWrite.values)
  let statements = composedStatements.get(query)
  if (statements === undefined) composedStatements.set(query, statements = new Map())
  const names = all.map(cteWrite => cteWrite.name).join(' ')
  let statement = statements.get(names)
  if (statement === undefined) {
    const text = `with created as (${query.text}), ${cteTexts(all, first)} select * from created`
    statement = new Statement(`composed-${createHash('sha256').update(text).digest('base64url').slice(0, 16)}`, text, query.makeRow)
    statements.set(names, statement)
  }
  return { statement: statement as Statement<Row>, values }
}

/** The CTEs of these writes, their parameters numbered from `$first` on. */
function cteTexts (cteWrites: readonly CteWrite[], first: number): string {
  return cteWrites.map(cteWrite => {
    const cte = cteWrite.cte(first)
    first += cteWrite.values.length
    return cte
  }).join(', ')
}

/**
 * A statement of a write with others riding in it: `with <head>, <CTE write>, … <tail>`, where
 * `head` names the CTEs the writes read (`created as (INSERT … RETURNING …)`) and takes `values`
 * as its parameters; `tail` is what the statement returns. For statements run once (an
 * import's), never prepared.
 */
export function withCteWrites (head: string, values: readonly Scalar[], cteWrites: readonly CteWrite[], tail: string): { text: string, values: Scalar[] } {
  const ctes = cteWrites.length === 0 ? '' : `, ${cteTexts(cteWrites, values.length + 1)}`
  return { text: `with ${head}${ctes} ${tail}`, values: [...values, ...cteWrites.flatMap(cteWrite => cteWrite.values)] }
}

/** Runs an insertion, with its CTE writes, and returns its row. */
export async function insert<Row, Args extends Scalar[]> (insertion: Insertion<Row, Args>): Promise<Row> {
  try {
    if (insertion.cteWrites.length === 0) return (await insertion.query(insertion.args)).rows[0]!
    const { statement, values } = composed(insertion)
    return (await runOnPool(insertion.query.pool, statement, values)).rows[0]!
  } catch (error) {
    throw insertion.failure(error)
  }
}

/**
 * Runs an insertion of many rows (an INSERT … SELECT), with its CTE writes, in `trx`, the
 * write's transaction, or on its own (`trx` the knex of the pool): every row it returns, in the
 * order the INSERT returned them. Its errors are its own: such an INSERT skips the rows a
 * unique index refuses, or fails whole (lib/db/batch-insert.ts).
 */
export async function insertAll<Row, Args extends Scalar[]> (insertion: Insertion<Row, Args>, trx: Knex): Promise<Row[]> {
  if (insertion.cteWrites.length === 0) return (await insertion.query(insertion.args, trx)).rows
  const { statement, values } = composed(insertion)
  if (!trx.isTransaction) return (await runOnPool(insertion.query.pool, statement, values)).rows
  return (await onConnectionOf(trx, connection => statement.run(connection, values))).rows
}

/** Runs `work` on the connection of the knex transaction `trx`, which keeps it. */
export async function onConnectionOf<T> (trx: Knex, work: (connection: pg.Client) => Promise<T>): Promise<T> {
  // A transaction's client hands out the transaction's own connection and keeps it on release.
  const client = transactionClient(trx)
  const connection = await client.acquireConnection()
  try {
    return await work(connection)
  } finally {
    await client.releaseConnection(connection)
  }
}

/** Runs a statement on a connection of the pool. */
export async function runOnPool<Row> (pool: pg.Pool, statement: Statement<Row>, values: Scalar[]): Promise<StatementResult<Row>> {
  const connection = await pool.connect()
  // An SQL error leaves the connection as good as before (each execution ends with a Sync);
  // one that has failed is dropped by the pool, which checks; one whose session ended is
  // dropped here, or the pool could lend it out before pg hears it closed.
  return statement.run(connection, values).then(result => {
    connection.release()
    return result
  }, (error: unknown) => {
    connection.release(endsSession(error) ? error as Error : undefined)
    throw error
  })
}

/** knex, for building queries and for transactions, and the pool that it and the prepared queries run on. */
export interface Database {
  knex: Knex
  pool: pg.Pool
}

// Stand-ins for the arguments while knex builds the query: numbers, since `limit()` takes no
// other, and far from any constant a query holds.
const FIRST_PLACEHOLDER = Number.MIN_SAFE_INTEGER

/** The statements whose replies lib/db/statement-query.ts handles: no COPY, never empty. */
const HANDLED = /^\s*(select|insert|update|delete|with)\s/i

/**
 * knex has no public way to reach a transaction's connection; its client's `acquireConnection`
 * and `releaseConnection` are what its own runner calls. package.json pins knex to the minor
 * range this was tested with, and `transactionClient` fails loudly on a knex without them.
 */
interface KnexClient {
  acquireConnection (): Promise<pg.Client>
  releaseConnection (connection: pg.Client): Promise<void>
}

/** The client of a knex transaction, through which its own connection is reached. */
function transactionClient (trx: Knex): KnexClient {
  const client = trx.client as Partial<KnexClient>
  if (typeof client.acquireConnection !== 'function' || typeof client.releaseConnection !== 'function') {
    throw new Error('This version of knex\'s client lacks acquireConnection or releaseConnection, which lib/db/prepared-query.ts uses: install the knex version package.json pins')
  }
  return client as KnexClient
}

// The SQL of each statement name declared on a pool. A connection runs a name it holds
// already without parsing it again, so a second text under one name would run the first.
const declaredNames = new WeakMap<pg.Pool, Map<string, string>>()

/** Refuses a name already declared on this pool with another SQL text. */
function declare (pool: pg.Pool, name: string, sql: string): void {
  let names = declaredNames.get(pool)
  if (names === undefined) declaredNames.set(pool, names = new Map())
  const declared = names.get(name)
  if (declared !== undefined && declared !== sql) {
    throw new Error(`The prepared statement name ${name} is taken by another query (${declared}): give each query a name of its own`)
  }
  names.set(name, sql)
}

/**
 * `build` receives one stand-in per argument and returns the query (built, or raw); `name` must be unique
 * to the SQL text, as PostgreSQL keeps it per connection: a second text under a name
 * declared on the same pool throws. Rows are objects of the columns
 * (lib/db/row-builder.ts) unless `makeRow` makes them otherwise.
 */
export function prepare<Args extends Scalar[], Row> (
  { knex, pool }: Database,
  name: string,
  build: (...args: never[]) => Knex.QueryBuilder | Knex.Raw,
  makeRow?: RowMaker<Row>
): PreparedQuery<Args, Row> {
  const placeholders = Array.from({ length: build.length }, (_, i) => FIRST_PLACEHOLDER + i)
  const { sql, bindings } = build(...placeholders as never[]).toSQL().toNative()
  if (!HANDLED.test(sql)) throw new Error(`The query ${name} is not a SELECT, INSERT, UPDATE or DELETE`)
  // For each binding: the index of the argument it stands for, or its constant value.
  const slots = bindings.map(value => {
    const arg = placeholders.indexOf(value as number)
    if (arg >= 0) return { arg }
    // Values are sent as their text (lib/db/statement-query.ts), which is a scalar's alone.
    if (value !== null && !['string', 'number', 'boolean'].includes(typeof value)) throw new Error(`The query ${name} holds a constant that is not a scalar`)
    return { value: value as Scalar }
  })
  const unused = placeholders.findIndex((_, i) => !slots.some(slot => slot.arg === i))
  if (unused >= 0) throw new Error(`The query ${name} does not use its argument ${unused}`)

  declare(pool, name, sql)
  const statement = new Statement<Row>(name, sql, makeRow)
  const values = (args: Args) => slots.map(slot => slot.arg === undefined ? slot.value : args[slot.arg]!)
  const run = async (args: Args, trx?: Knex) => {
    if (trx === undefined || trx === knex) return runOnPool(pool, statement, values(args))
    return onConnectionOf(trx, connection => statement.run(connection, values(args)))
  }
  return Object.assign(run, { text: sql, values, makeRow, pool })
}
