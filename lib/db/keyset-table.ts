import type { TObject, TSchema } from '@sinclair/typebox'
import type { Knex } from 'knex'
import type pg from 'pg'
import { FifoMap } from 'toad-cache'
import type { ListFields, ListRequest } from '../http/list-query.js'
import { MAX_ID, MAX_POSITION } from '../http/limits.js'
import { copyExport, type ExportStream } from './export-copy.js'
import { jsonRows, type JsonRow } from './json-row-writer.js'
import { applyFilters, applyKeyset, orderKeys, type CustomFilter } from './list-sql.js'
import { prepare, type Database } from './prepared-query.js'
import { versionColumn, type Versioned } from './row-versions.js'

export interface KeysetTableOptions {
  /** Names its statements, unique to the resource. */
  name: string
  /** The table as the resource sees it: `knex => knex('clients').whereNull('deleted_at')`. */
  rows: (knex: Knex) => Knex.QueryBuilder
  /** What a row holds, as the resource's schema names it. */
  columns: readonly (string | Knex.Raw)[]
  /** The resource's schema: rows are written as its JSON. */
  schema: TObject
  /** The schemas the schema's `$ref`s name. */
  references?: TSchema[]
  /** What lists filter and sort on. */
  fields: ListFields
  /** How the fields that are not columns filter. */
  customFilters?: Record<string, CustomFilter>
  /** The id column as `rows` names it. */
  id?: string
  /** Its type: `bigint` for change positions. */
  idType?: 'integer' | 'bigint'
  /**
   * Whether ids are change positions (lib/db/settled-position.ts): a list then shows the rows
   * up to the settled position its caller gives only, so that one following its pages skips none.
   */
  settled?: boolean
}

/** One page of a list: its rows, and what the `Link` to the next and the count say. */
export interface ListPage {
  rows: JsonRow[]
  /** The last row's sort values (bar id), as PostgreSQL wrote them, and its id, when more follow. */
  next?: { values: string[], id: number } | undefined
  /** The count asked for, if any. */
  total?: number | undefined
}

/**
 * How long an estimated count is kept, and how many are: the planner's estimate of the same
 * filters changes only when the table's statistics do (ANALYZE, autovacuum), and asking for it
 * on every page of a list would cost a fifth of the page (docs/performance.md).
 */
const ESTIMATE_TTL = 10_000
const ESTIMATES_KEPT = 1000
/**
 * A list the planner takes for fewer rows than this, whole, has its estimated counts counted
 * instead: the planner's guesses are at their worst on small tables (one never analyzed is
 * taken for ten pages: 70 rows for 6), and counting a small table is cheap. The count stops at
 * this many, so that statistics far too low cost no more; whatever it answers below is exact.
 * On a larger list, the planner's estimate stands even where it is small (a filter matching
 * few): counting those would read the whole list to find them.
 */
export const EXACT_COUNT_BELOW = 10_000

/**
 * A column as an export shows it, the form of the JSON answers: a timestamp in ISO 8601 UTC
 * with milliseconds (cut, not rounded, as lib/db/pg-types.ts writes it); anything else as it is.
 */
function exportedValue (knex: Knex, column: string, property: TSchema): Knex.Raw {
  if (property.type === 'string' && property.format === 'date-time') {
    return knex.raw('to_char(date_trunc(\'milliseconds\', ??) at time zone \'UTC\', \'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"\')', [column])
  }
  return knex.raw('??', [column])
}

/** Values as PostgreSQL writes them: the rows are written as JSON from its text. */
const AS_TEXT = { getTypeParser: () => (value: string) => value } as unknown as pg.CustomTypesConfig

/**
 * The reads every resource's table gets: one row by id, and lists. A list in id order with no
 * filter is a prepared statement (the hot path); one with filters, a sort or a count is built
 * for its request, every value a parameter, and runs unnamed: prepared statements per
 * connection stay the few each resource names, whatever filters callers send.
 */
export function keysetTable<Row> (database: Database, options: KeysetTableOptions) {
  const { knex, pool } = database
  const { name, rows, columns, schema, references = [], fields, customFilters = {}, id = 'id', idType = 'integer', settled = false } = options
  const maxId = idType === 'bigint' ? MAX_POSITION : MAX_ID
  // The rows a list may show: all, or those up to the settled position.
  const shown = (knex: Knex, through: number) => settled ? rows(knex).where(id, '<=', through) : rows(knex)
  // A page's cursor takes each sort key from the row, by the name the row has it under.
  const selected = new Set(columns.filter(column => typeof column === 'string').map(column => column.split('.').at(-1)))
  /** The column a field of the record is read from, by its name. */
  const columnOf = (name: string) => columns.find((column): column is string => typeof column === 'string' && column.split('.').at(-1) === name)!
  for (const [field, { column, sortable }] of Object.entries(fields)) {
    if (column === undefined && !customFilters[field]) throw new Error(`The list field ${field} of ${name} has neither a column nor a filter of its own`)
    if (sortable && (column === undefined || !selected.has(field))) throw new Error(`The sortable list field ${field} of ${name} is not a column the list selects under that name`)
  }
  const plainList = prepare<[after: number, limit: number], JsonRow>(database, `${name}.list`, (after, limit) =>
    rows(knex).select(columns).where(id, '>', after).orderBy(id).limit(limit), jsonRows(schema, references))
  const plainSettledList = settled && prepare<[after: number, limit: number, through: number], JsonRow>(database, `${name}.settled-list`, (after, limit, through) =>
    shown(knex, through).select(columns).where(id, '>', after).orderBy(id).limit(limit), jsonRows(schema, references))
  // A row is found with its version, which tags it (lib/db/row-versions.ts).
  const table = id.includes('.') ? id.slice(0, id.lastIndexOf('.')) : undefined
  const find = prepare<[id: number], Versioned<Row>>(database, `${name}.find`, rowId =>
    rows(knex).select([...columns, versionColumn(knex, table)]).where(id, rowId).first())
  // The list without filters, whose size says whether an estimated count is counted instead.
  const whole = rows(knex).select(knex.raw('1')).toSQL().toNative()
  const wholeList = { sql: whole.sql, values: whole.bindings as unknown[] }
  // The planner's estimates, by filters: they move only as the table's statistics do. Kept
  // ESTIMATE_TTL, the oldest forgotten first past ESTIMATES_KEPT.
  const estimates = new FifoMap<number>(ESTIMATES_KEPT, ESTIMATE_TTL)
  // Every list query selects the same columns: one row writer serves them all.
  let toRow: ((values: (string | null)[]) => JsonRow) | undefined
  let columnIndex: Map<string, number> | undefined

  async function run (qb: Knex.QueryBuilder): Promise<(string | null)[][]> {
    const { sql, bindings } = qb.toSQL().toNative()
    const result = await pool.query({ text: sql, values: bindings as unknown[], rowMode: 'array', types: AS_TEXT })
    toRow ??= jsonRows(schema, references)(result.fields)
    columnIndex ??= new Map(result.fields.map((field, i) => [field.name, i]))
    return result.rows as (string | null)[][]
  }

  /** The count asked for: PostgreSQL's planner's estimate, or every matching row counted. */
  async function count (request: ListRequest, through: number): Promise<number> {
    const { sql, bindings } = applyFilters(shown(knex, through), fields, request.filters, customFilters).select(knex.raw('1')).toSQL().toNative()
    const values = bindings as unknown[]
    if (request.count === 'exact') {
      const result = await pool.query({ text: `select count(*)::int as total from (${sql}) matching`, values })
      return result.rows[0].total as number
    }
    const estimate = await plannerEstimate(sql, values)
    if (estimate >= EXACT_COUNT_BELOW || await plannerEstimate(wholeList.sql, wholeList.values) >= EXACT_COUNT_BELOW) return estimate
    const result = await pool.query({ text: `select count(*)::int as total from (${sql} limit ${EXACT_COUNT_BELOW}) matching`, values })
    return result.rows[0].total as number
  }

  /** The planner's estimate of the rows a query finds, kept a while. */
  async function plannerEstimate (sql: string, values: unknown[]): Promise<number> {
    const key = JSON.stringify([sql, values])
    const known = estimates.get(key)
    if (known !== undefined) return known
    const result = await pool.query({ text: `explain (format json) ${sql}`, values })
    const [plan] = result.rows[0]['QUERY PLAN'] as [{ Plan: { 'Plan Rows': number } }]
    const estimate = Math.round(plan.Plan['Plan Rows'])
    estimates.set(key, estimate)
    return estimate
  }

  /** The query of a page that is not the plain list in id order. */
  function pageQuery (request: ListRequest, through: number, keys = orderKeys(fields, id, request, idType)): Knex.QueryBuilder {
    return applyKeyset(applyFilters(shown(knex, through).select(columns), fields, request.filters, customFilters), keys, request.after).limit(request.limit + 1)
  }

  async function page (request: ListRequest, through: number): Promise<Omit<ListPage, 'total'>> {
    const { limit } = request
    if (request.filters.length === 0 && request.sort.length === 0) {
      const after = request.after?.id ?? 0
      const found = (await (plainSettledList ? plainSettledList([after, limit + 1, through]) : plainList([after, limit + 1]))).rows
      if (found.length <= limit) return { rows: found }
      found.length = limit
      return { rows: found, next: { values: [], id: found[limit - 1]!.id } }
    }
    const keys = orderKeys(fields, id, request, idType)
    const values = await run(pageQuery(request, through, keys))
    const found = values.slice(0, limit).map(row => toRow!(row))
    if (values.length <= limit) return { rows: found }
    const last = values[limit - 1]!
    const lastKeys = keys.slice(0, -1).map(key => last[columnIndex!.get(key.field)!]!)
    return { rows: found, next: { values: lastKeys, id: found[limit - 1]!.id } }
  }

  return {
    /**
     * One page of a list as the request asks, and its count if asked for, both at once; of a
     * `settled` table, the rows up to the settled position `through` only.
     */
    async query (request: ListRequest, through = Number.MAX_SAFE_INTEGER): Promise<ListPage> {
      // A first page with no next holds every matching row: its count is exact, and neither the
      // planner nor the table is asked.
      if (request.count === undefined) return page(request, through)
      const estimateAfter = request.count === 'estimated' && request.after === undefined
      const [found, total] = await Promise.all([page(request, through), estimateAfter ? undefined : count(request, through)])
      if (request.count === 'exact') return { ...found, total }
      if (estimateAfter && !found.next) return { ...found, total: found.rows.length }
      // Never less than the page shows (its rows, and one more when a next page follows): an
      // estimate is 10,000 or more, and a count all there are, but it runs apart from the page:
      // rows deleted in between would make it fewer.
      const shown = found.rows.length + (found.next ? 1 : 0)
      return { ...found, total: Math.max(total ?? await count(request, through), shown) }
    },

    /**
     * Every row the list's filters and sort match, after its cursor if it has one, with no page
     * limit, as PostgreSQL's COPY writes it (lib/db/export-copy.ts), from one snapshot: CSV
     * with a header, or NDJSON; each field as the JSON answers show it. For tables not `settled`.
     */
    async export (request: ListRequest, format: 'csv' | 'ndjson', timeoutMs: number): Promise<ExportStream> {
      const fieldsShown = Object.entries(schema.properties).map(([name, property]) => ({ name, value: exportedValue(knex, columnOf(name), property) }))
      const selected = format === 'csv'
        ? fieldsShown.map(({ name, value }) => knex.raw('? as ??', [value, name]))
        : [knex.raw(`json_build_object(${fieldsShown.map(() => '?, ?').join(', ')})::text`, fieldsShown.flatMap(({ name, value }) => [name, value]))]
      const { sql, bindings } = applyKeyset(applyFilters(rows(knex).select(selected), fields, request.filters, customFilters), orderKeys(fields, id, request, idType), request.after).toSQL().toNative()
      return copyExport(pool, sql, bindings as unknown[], format === 'csv' ? 'csv' : 'lines', timeoutMs)
    },

    /** The SQL and values a page of this list runs, for EXPLAIN. */
    pageSql (request: ListRequest): Knex.SqlNative {
      return pageQuery(request, Number.MAX_SAFE_INTEGER).toSQL().toNative()
    },

    /** The row of this id with its version, if any; an id past the id column's type names none. */
    async find (rowId: number, trx: Knex = knex): Promise<Versioned<Row> | undefined> {
      if (rowId > maxId) return undefined
      return (await find([rowId], trx)).rows[0]
    }
  }
}
