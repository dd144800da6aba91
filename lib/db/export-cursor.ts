import type pg from 'pg'

/** Values as PostgreSQL writes them: the rows are written from its text. */
const AS_TEXT = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig

/** What a fetch of an export's cursor read: its columns, and its rows' values as PostgreSQL's text. */
export interface ExportBatch {
  fields: pg.FieldDef[]
  rows: (string | null)[][]
}

/**
 * Every row of a query (`sql`, whose parameters are `values`), `size` at a time, from one
 * snapshot: a cursor in a read-only REPEATABLE READ transaction on a connection of its own,
 * fetched as the consumer asks, so that a slow client holds back the reading rather than
 * filling memory. A consumer that stops early (a client gone) ends the transaction with the
 * connection, which is closed rather than returned to the pool mid-transaction.
 */
export async function * exportBatches (pool: pg.Pool, sql: string, values: unknown[], size: number): AsyncGenerator<ExportBatch> {
  const connection = await pool.connect()
  let done = false
  try {
    await connection.query('begin isolation level repeatable read read only')
    await connection.query({ text: `declare export_rows no scroll cursor for ${sql}`, values })
    for (;;) {
      const { fields, rows } = await connection.query<(string | null)[]>({ text: `fetch ${size} from export_rows`, rowMode: 'array', types: AS_TEXT })
      if (rows.length === 0) break
      yield { fields, rows }
    }
    await connection.query('commit')
    done = true
  } finally {
    connection.release(done ? undefined : new Error('export ended early'))
  }
}
