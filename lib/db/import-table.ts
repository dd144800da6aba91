import { once } from 'node:events'
import type pg from 'pg'
import { from as copyFrom } from 'pg-copy-streams'
import type { BatchColumns } from './batch-insert.js'
import { withCteWrites, type CteWrite } from './prepared-query.js'

/** What an import writes into a table: the table, its columns as the file's fields, and what a record is. */
export interface ImportTarget<Input> {
  table: string
  /** The columns written, named as the fields, with their PostgreSQL types. */
  columns: BatchColumns<Input>
  /** The record's columns, as a create returns them (the audit entries and change events show them). */
  returning: readonly string[]
}

/** A column whose values a unique index holds once (`email`, by `lower(email)`): what an import matches records on. */
export interface UniqueColumn<Input> {
  column: keyof Input & string
  /** The index's expression, over the column named (`lower(records.email)`). */
  key: (column: string) => string
}

/** The rows an import has read, until its transaction ends: each with its line in the file. */
const ROWS = 'pg_temp.import_rows'

/** How many of a statement's rows an answer names: the first, in the file's order. */
export const NAMED_ROWS = 100

/** Rows refused by the data, the first NAMED_ROWS of them, and how many there are. */
export interface RefusedRows {
  total: number
  first: Array<{ line: number, value: string, holder?: number }>
}

const fields = <Input>(target: ImportTarget<Input>) => Object.keys(target.columns)

/** Makes the table of the rows read, which goes with the transaction (`connection`'s). */
export async function createRowsTable<Input> (connection: pg.ClientBase, target: ImportTarget<Input>): Promise<void> {
  const columns = Object.entries(target.columns).map(([name, type]) => `${name} ${type as string}`)
  await connection.query(`create temp table ${ROWS} (line integer not null, ${columns.join(', ')}) on commit drop`)
}

// COPY's text format: these characters escaped. (Every field the kinds import is required: no
// value is ever missing, which COPY would take as \N.)
const ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' }
const copyText = (value: unknown) => String(value).replace(/[\\\t\n\r]/g, c => ESCAPES[c]!)

/** Text gathered before a write to the COPY: fewer, larger messages. */
const COPY_CHUNK = 64 * 1024

/** The rows' way into the table: `write` each, then `end`; `abort` on failure (COPY fails, and the transaction with it). */
export interface RowsCopy<Input> {
  write: (line: number, row: Input) => Promise<void>
  end: () => Promise<void>
  abort: (error: Error) => void
}

/** A COPY … FROM STDIN into the rows' table, written as the rows come, waiting when PostgreSQL is behind. */
export function copyRows<Input> (connection: pg.ClientBase, target: ImportTarget<Input>): RowsCopy<Input> {
  const names = fields(target)
  const stream = connection.query(copyFrom(`copy ${ROWS} (line, ${names.join(', ')}) from stdin`))
  // Its error comes from `end` (or the next `write`), whichever the import is at.
  let failed: Error | undefined
  stream.on('error', error => { failed = error })
  let held = ''
  const flush = async () => {
    /* c8 ignore next -- PostgreSQL failing mid-COPY (the connection lost): the import fails with it */
    if (failed) throw failed
    const text = held
    held = ''
    // PostgreSQL behind: the file's reading waits, and so the client's upload. (A large file's
    // lot, as the bench's million rows; the tests' files are written faster than they come.)
    /* c8 ignore next */
    if (!stream.write(text)) await once(stream, 'drain')
  }
  return {
    async write (line, row) {
      let text = String(line)
      for (const name of names) text += '\t' + copyText((row as Record<string, unknown>)[name])
      held += text + '\n'
      if (held.length >= COPY_CHUNK) await flush()
    },
    async end () {
      if (held.length > 0) await flush()
      stream.end()
      await once(stream, 'finish')
      /* c8 ignore next -- as in flush */
      if (failed) throw failed
    },
    abort (error) {
      stream.destroy(error)
    }
  }
}

/** The refused rows a statement returns (`line`, `value`, `holder`, and the `total` of them). */
async function refused (connection: pg.ClientBase, text: string): Promise<RefusedRows> {
  const { rows } = await connection.query<{ line: number, value: string, holder: number | null, total: number }>(text)
  return {
    total: rows[0]?.total ?? 0,
    first: rows.map(({ line, value, holder }) => holder === null ? { line, value } : { line, value, holder })
  }
}

/**
 * Takes out of the rows read each that repeats the unique value of an earlier one (the file
 * contradicts itself): those taken out, each with the line that holds its value.
 */
export async function takeRepeats<Input> (connection: pg.ClientBase, { column, key }: UniqueColumn<Input>): Promise<RefusedRows> {
  return refused(connection, `with repeats as (
      select line, first_value(line) over (partition by ${key(column)} order by line) as holder from ${ROWS}),
    gone as (delete from ${ROWS} rows using repeats where rows.line = repeats.line and repeats.line <> repeats.holder
      returning rows.line, rows.${column} as value, repeats.holder)
    select line, value, holder, (count(*) over ())::int as total from gone order by line limit ${NAMED_ROWS}`)
}

/** The rows read whose unique value a record holds. */
export async function takenRows<Input> (connection: pg.ClientBase, target: ImportTarget<Input>, unique: UniqueColumn<Input>): Promise<RefusedRows> {
  const { column, key } = unique
  return refused(connection, `select line, ${column} as value, null::integer as holder, (count(*) over ())::int as total from ${ROWS} rows
    where exists (select 1 from ${target.table} records where ${key(`records.${column}`)} = ${key(`rows.${column}`)})
    order by line limit ${NAMED_ROWS}`)
}

/** How many rows matched a record by their unique value, and how many of those changed it. */
export interface Updates { matched: number, updated: number }

/**
 * Updates each record whose unique value a row holds to the row's values, where they differ,
 * and takes the rows matched out of those read. `cteWrites` ride in the statement, reading
 * `updated`: each record as changed, with `before_row`, the record before (jsonb).
 */
export async function updateHeld<Input> (connection: pg.ClientBase, target: ImportTarget<Input>, unique: UniqueColumn<Input>, cteWrites: readonly CteWrite[]): Promise<Updates> {
  const { table, returning } = target
  const { column, key } = unique
  const names = fields(target)
  const list = (alias: string, columns: readonly string[]) => columns.map(name => `${alias}.${name}`).join(', ')
  const head = `matched as (
      select records.id, rows.line, ${list('rows', names)},
        jsonb_build_object(${returning.map(name => `'${name}', records.${name}`).join(', ')}) as before_row,
        (${list('records', names)}) is distinct from (${list('rows', names)}) as differs
      from ${ROWS} rows join ${table} records on ${key(`records.${column}`)} = ${key(`rows.${column}`)}
      -- Locked in the order of their ids, as every updating import locks them: two never wait on each other in a circle.
      order by records.id
      for no key update of records),
    updated as (update ${table} records set ${names.map(name => `${name} = matched.${name}`).join(', ')}, updated_at = now()
      from matched where records.id = matched.id and matched.differs
      returning ${list('records', returning)}, records.xmin::text as version, matched.before_row),
    gone as (delete from ${ROWS} rows using matched where rows.line = matched.line)`
  const { text, values } = withCteWrites(head, [], cteWrites, 'select (select count(*) from matched)::int as matched, (select count(*) from updated)::int as updated')
  const { rows: [updates] } = await connection.query<Updates>(text, values)
  return updates!
}

/**
 * Inserts the rows read, their ids in the file's order; with `unique`, a row whose value a
 * record holds (one committed meanwhile) is skipped. `cteWrites` ride in the statement, reading
 * `created`, the records made. How many were.
 */
export async function insertRows<Input> (connection: pg.ClientBase, target: ImportTarget<Input>, unique: UniqueColumn<Input> | undefined, cteWrites: readonly CteWrite[]): Promise<number> {
  const { table } = target
  const names = fields(target).join(', ')
  // With a unique value, written in its order (of code points, as a batch sorts its rows), so
  // that two writers inserting shared values take them in the same order and do not wait on
  // each other in a circle (a deadlock); the ids, drawn in the file's order first (a volatile
  // column of a sorted subquery is computed after its sort), keep the file's order.
  const rows = unique === undefined
    ? `insert into ${table} (${names}) select ${names} from ${ROWS} order by line`
    : `insert into ${table} (id, ${names}) overriding system value
      select id, ${names} from (
        select nextval(pg_get_serial_sequence('${table}', 'id')) as id, ${names} from ${ROWS} order by line) numbered
      order by ${unique.key(`numbered.${unique.column}`)} collate "C"
      on conflict ((${unique.key(unique.column)})) do nothing`
  const head = `created as (${rows} returning ${target.returning.join(', ')}, xmin::text as version)`
  const { text, values } = withCteWrites(head, [], cteWrites, 'select count(*)::int as inserted from created')
  const { rows: [made] } = await connection.query<{ inserted: number }>(text, values)
  return made!.inserted
}
