import type { Readable } from 'node:stream'
import type pg from 'pg'
import { to as copyTo } from 'pg-copy-streams'

/**
 * `sql` with each parameter `$n` replaced by its value as PostgreSQL quotes it (`quote_nullable`):
 * a COPY takes no parameters. A quoted literal is of unknown type until its place types it,
 * as a parameter is, so the query means the same.
 */
async function inlined (connection: pg.PoolClient, sql: string, values: unknown[]): Promise<string> {
  if (values.length === 0) return sql
  const { rows: [literals] } = await connection.query<string[]>({
    text: `select ${values.map((_, i) => `quote_nullable($${i + 1}::text)`).join(', ')}`, values, rowMode: 'array'
  })
  return sql.replace(/\$(\d+)/g, (_, n: string) => literals![Number(n) - 1]!)
}

/** An export's rows as COPY writes them, and their number, told once its transaction has committed (0 if it ended early). */
export interface ExportStream extends Readable {
  rowsCopied: Promise<number>
}

/**
 * Every row of a query (`sql`, whose parameters are `values`) as PostgreSQL's COPY writes it, a
 * stream read as the consumer takes it (COPY … TO STDOUT: one statement, one snapshot): CSV
 * with a header line of the query's column names, or each row's one column a line as it is
 * (`lines`: CSV whose quote and delimiter are control characters that no JSON text holds, so
 * nothing is quoted). The COPY has `timeoutMs`, from its start to its last row taken, in place
 * of the pool's statement timeout. The connection goes back to the pool once the COPY ends; a
 * consumer that stops early (a client gone) closes it, which ends the query.
 */
export async function copyExport (pool: pg.Pool, sql: string, values: unknown[], form: 'csv' | 'lines', timeoutMs: number): Promise<ExportStream> {
  const connection = await pool.connect()
  try {
    // A transaction of its own for the time limit: SET LOCAL, as a session's setting would
    // outlive the export behind a transaction-mode PgBouncer.
    await connection.query(`begin; set local statement_timeout = ${Math.max(1, Math.ceil(timeoutMs))}`)
    const options = form === 'csv' ? 'format csv, header' : 'format csv, quote e\'\\x01\', delimiter e\'\\x02\''
    const stream = connection.query(copyTo(`copy (${await inlined(connection, sql, values)}) to stdout (${options})`))
    let counted: (rows: number) => void
    const rowsCopied = new Promise<number>(resolve => { counted = resolve })
    let ended = false
    const end = (error?: Error) => {
      if (ended) return
      ended = true
      // Read to its end, the COPY's transaction commits (it wrote nothing) and the connection
      // goes back; ended otherwise, the connection is closed, which ends the query. The number
      // of rows comes after the COPY's last (its CommandComplete), surely there by the commit.
      if (error !== undefined) {
        counted(0)
        return connection.release(error)
      }
      connection.query('commit').then(() => {
        counted(stream.rowCount)
        connection.release()
      },
      /* c8 ignore next -- the connection lost between the COPY's end and its commit */
      (failure: Error) => { counted(0); connection.release(failure) })
    }
    stream.on('end', () => end())
    stream.on('error', end)
    stream.on('close', () => end(new Error('the export ended before its COPY did')))
    return Object.assign(stream, { rowsCopied })
  /* c8 ignore next 4 -- the database failing between the connection's checkout and the COPY */
  } catch (error) {
    connection.release(error as Error)
    throw error
  }
}
