import { jsonText } from './json-text.js'
import { insertion, prepare, type Database, type Insertion } from './prepared-query.js'
import type { Versioned } from './row-versions.js'

/** A column a batch writes (named as its field), and the PostgreSQL type its JSON text is cast to. */
export type BatchColumns<Input> = { [Field in keyof Input & string]: 'text' | 'smallint' | 'integer' | 'date' }

/**
 * The INSERT of a batch of rows of `table` (request.insertRecords runs it): the rows go as one
 * JSON array, one parameter whatever their number, and are inserted in their order, each
 * returned as `returning` with its version; RETURNING gives them in that order (PostgreSQL
 * inserts the rows of an INSERT … SELECT … ORDER BY as they come, and returns each as it
 * goes). A field a row lacks is NULL, not the column's default. With `unique`, the expression
 * of a unique index (`lower(email)`), a row whose value a record holds is skipped rather than
 * failing the statement (the write path tells it), unless `skipTaken` is false: then the
 * statement fails whole (23505), as an all-or-nothing batch run without a transaction needs.
 */
export function batchInsert<Input, Row> (database: Database, table: string, columns: BatchColumns<Input>, returning: readonly string[], unique?: string) {
  const names = Object.keys(columns)
  const values = Object.entries(columns).map(([name, type]) => `(r->>'${name}')::${type as string}`)
  const statement = (onConflict: string) => (rows: string) => database.knex.raw(
    `insert into ${table} (${names.join(', ')})
    select ${values.join(', ')} from jsonb_array_elements(?::jsonb) with ordinality as batch(r, n) order by n
    ${onConflict}
    returning ${returning.join(', ')}, xmin::text as version`, [rows])
  const skipping = prepare<[rows: string], Versioned<Row>>(database, `${table}.create-batch`, statement(unique === undefined ? '' : `on conflict ((${unique})) do nothing`))
  const failing = unique === undefined ? skipping : prepare<[rows: string], Versioned<Row>>(database, `${table}.create-batch-whole`, statement(''))
  return (rows: readonly Input[], skipTaken = true): Insertion<Versioned<Row>, [rows: string]> => insertion(skipTaken ? skipping : failing, [jsonText(rows)])
}
