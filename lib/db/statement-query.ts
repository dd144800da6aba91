import { SpanKind, type Attributes } from '@opentelemetry/api'
import type pg from 'pg'
import { activeTrace, inSpan } from '../tracing/active-trace.js'
import { sqlAttributes } from '../tracing/sql-span.js'
import { PooledClient } from './pooled-client.js'
import { rowBuilder } from './row-builder.js'

/** What a value bound to a prepared statement may be: sent as its text, or as NULL. */
export type Scalar = string | number | boolean | null

/** A row description, a data row and a command's completion, as pg's parser gives them. */
interface RowDescription { fields: pg.FieldDef[] }
interface DataRow { fields: (string | null)[] }
interface CommandComplete { text: string }

/**
 * The part of pg's connection that a query uses to send the extended protocol's messages.
 * `parsedStatements` and `submittedNamedStatements` are pg's private bookkeeping of the named
 * statements a connection holds (the latter since pg 8.23): package.json pins pg to the minor
 * range this was tested with, and `checked` fails every query loudly on a pg without them.
 */
interface Connection extends pg.Connection {
  parsedStatements: Record<string, string | undefined>
  submittedNamedStatements: Record<string, string | undefined>
}

/** What `Execution` uses of pg's connection: these objects, and these methods. */
const RECORDS = ['parsedStatements', 'submittedNamedStatements', 'stream']
const METHODS = ['parse', 'bind', 'describe', 'execute', 'sync']
const fit = new WeakSet<pg.Connection>()

/** The connection, once it is known to have every member `Execution` uses; throws otherwise. */
function checked (connection: pg.Connection): Connection {
  if (fit.has(connection)) return connection as Connection
  const record = connection as unknown as Record<string, unknown>
  const missing = [
    ...RECORDS.filter(name => typeof record[name] !== 'object'),
    ...METHODS.filter(name => typeof record[name] !== 'function')
  ]
  if (missing.length > 0) {
    throw new Error(`This version of pg's connection lacks ${missing.join(', ')}, which lib/db/statement-query.ts uses: install the pg version package.json pins`)
  }
  fit.add(connection)
  return connection as Connection
}

export interface StatementResult<Row> {
  rows: Row[]
  /** The rows the command returned or touched. */
  rowCount: number
}

/** Makes, from a statement's columns, the function that turns each row's values into a row. */
export type RowMaker<Row> = (fields: pg.FieldDef[]) => (values: (string | null)[]) => Row

/** A named statement: its SQL, and once its columns are known, the function that makes its rows. */
export class Statement<Row> {
  toRow: ((values: (string | null)[]) => Row) | undefined
  /** Its spans' attributes, made at its first traced run. */
  #spanAttributes: Attributes | undefined
  readonly name: string
  readonly text: string
  readonly makeRow: RowMaker<Row>
  constructor (name: string, text: string, makeRow: RowMaker<Row> = rowBuilder) {
    this.name = name
    this.text = text
    this.makeRow = makeRow
  }

  /**
   * Runs the statement on a client of pg's (of a pool or a transaction) with these values; in
   * a traced request, in a CLIENT span of the statement's name under the request's.
   */
  run (client: pg.ClientBase, values: Scalar[]): Promise<StatementResult<Row>> {
    const active = activeTrace.getStore()
    if (active === undefined) return this.#execute(client, values)
    this.#spanAttributes ??= sqlAttributes(this.text)
    return inSpan(active, this.name, SpanKind.CLIENT, this.#spanAttributes, () => this.#execute(client, values))
  }

  #execute (client: pg.ClientBase, values: Scalar[]): Promise<StatementResult<Row>> {
    return new Promise((resolve, reject) => {
      // Before the client takes the query: a throw inside `submit` would leave it stuck.
      checked((client as unknown as { connection: pg.Connection }).connection)
      // Behind a transaction-mode pooler a named statement would be looked for, or found
      // already made, on whichever server connection the pooler hands out: sent unnamed there.
      const name = client instanceof PooledClient ? UNNAMED : this.name
      client.query(new Execution(this, name, values.map(toText), (error, result) => error ? reject(error) : resolve(result!)))
    })
  }
}

/** The unnamed statement, which lasts until the next Parse on the same server connection. */
const UNNAMED = ''

const toText = (value: Scalar) => value === null ? null : String(value)

type Callback<Row> = (error: Error | null, result?: StatementResult<Row>) => void

/**
 * One execution of a statement, as a query object of pg's own kind (pg's `Submittable`, as
 * pg-cursor is one). pg's `Query` spends a tenth of a GET by id's CPU on two things a named
 * statement does not need: it copies the query's settings by their property descriptors, and
 * it makes each result's row template and parser list afresh from the row description. Here
 * the statement's row function is made from the first description, and later executions do
 * not ask for one (docs/performance.md).
 *
 * pg calls a query's handlers for the messages its statement brings: these are those of a
 * SELECT, INSERT, UPDATE or DELETE, all that `prepare` takes. The others (an empty query, a
 * suspended portal, COPY) come only of statements it refuses.
 */
class Execution<Row> implements pg.Submittable {
  readonly name: string
  readonly text: string
  private readonly rows: Row[] = []
  private rowCount = 0
  private failure: Error | null = null

  private readonly statement: Statement<Row>
  private readonly values: (string | null)[]
  readonly callback: Callback<Row>

  constructor (statement: Statement<Row>, name: string, values: (string | null)[], callback: Callback<Row>) {
    this.statement = statement
    this.values = values
    this.callback = callback
    this.name = name
    this.text = statement.text
  }

  /** Sends the statement's messages; returns, for the client to report, why it cannot run. */
  submit (pgConnection: pg.Connection): Error | undefined {
    const connection = pgConnection as Connection
    const { name, text } = this
    const held = name === UNNAMED ? undefined : connection.parsedStatements[name] ?? connection.submittedNamedStatements[name]
    // The connection would run the text it holds under that name: refused, as pg's own queries
    // refuse it, whichever way the statement was made (lib/db/prepared-query.ts's `prepare`
    // refuses it earlier, when a query is declared).
    if (held !== undefined && held !== text) {
      return new Error(`The prepared statement name ${name} is taken by another query (${held}): give each query a name of its own`)
    }
    // The messages go out in one write.
    connection.stream.cork()
    try {
      if (held === undefined) {
        connection.parse({ name, text, types: [] }, false)
        if (name !== UNNAMED) connection.submittedNamedStatements[name] = text
      }
      connection.bind({ statement: name, values: this.values }, false)
      if (this.statement.toRow === undefined) connection.describe({ type: 'P', name: '' }, false)
      connection.execute({ portal: '' }, false)
      connection.sync()
    } finally {
      connection.stream.uncork()
    }
    return undefined
  }

  handleRowDescription (message: RowDescription) {
    try {
      this.statement.toRow ??= this.statement.makeRow(message.fields)
    } catch (error) {
      this.failure ??= error as Error
    }
  }

  handleDataRow (message: DataRow) {
    if (this.failure) return
    try {
      this.rows.push(this.statement.toRow!(message.fields))
    } catch (error) {
      this.failure = error as Error
    }
  }

  handleCommandComplete (message: CommandComplete) {
    // `SELECT 3`, `INSERT 0 1`, `UPDATE 2`: the count comes last.
    this.rowCount = Number(message.text.slice(message.text.lastIndexOf(' ') + 1)) || 0
  }

  // The client forgets a query once it reports an error; ReadyForQuery then comes to nobody.
  handleError (error: Error) {
    this.callback(error)
  }

  handleReadyForQuery () {
    if (this.failure) this.callback(this.failure)
    else this.callback(null, { rows: this.rows, rowCount: this.rowCount })
  }
}
