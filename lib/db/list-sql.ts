import type { Knex } from 'knex'
import type { FieldType, Filter, ListFields, ListRequest } from '../http/list-query.js'

/** The PostgreSQL type each value is bound as: every value is a parameter, never SQL text. */
const CASTS: Record<FieldType, string> = { integer: 'integer', bigint: 'bigint', text: 'text', date: 'date', timestamp: 'timestamptz', boolean: 'boolean' }

const COMPARE = { eq: '=', ne: '<>', gt: '>', gte: '>=', lt: '<', lte: '<=' } as const

/** `%`, `_` and the escape character itself match literally in a LIKE pattern. */
const likeLiteral = (text: string) => text.replace(/[\\%_]/g, match => `\\${match}`)

/**
 * A filter as SQL. Timestamps are shown to the millisecond (lib/db/pg-types.ts) and stored to
 * the microsecond: a timestamp given stands for the whole millisecond it falls in, so that a
 * record's shown `created_at` finds it, and `gt` that value leaves it out.
 */
function condition (qb: Knex.QueryBuilder, column: string, type: FieldType, { operator, value }: Filter): void {
  const cast = CASTS[type]
  if (operator === 'contains') {
    qb.whereRaw('?? ilike ?', [column, `%${likeLiteral(String(value))}%`])
  } else if (operator === 'starts_with') {
    qb.whereRaw('?? ilike ?', [column, `${likeLiteral(String(value))}%`])
  } else if (operator === 'in') {
    if (type === 'timestamp') qb.whereRaw('date_trunc(\'milliseconds\', ??) = any(array(select date_trunc(\'milliseconds\', t) from unnest(?::timestamptz[]) t))', [column, value])
    else qb.whereRaw(`?? = any(?::${cast}[])`, [column, value])
  } else if (type === 'timestamp') {
    const start = 'date_trunc(\'milliseconds\', ?::timestamptz)'
    const next = `${start} + interval '1 millisecond'`
    const sql = {
      eq: `?? >= ${start} and ?? < ${next}`,
      ne: `(?? < ${start} or ?? >= ${next})`,
      gt: `?? >= ${next}`,
      gte: `?? >= ${start}`,
      lt: `?? < ${start}`,
      lte: `?? < ${next}`
    }[operator]
    const bindings = operator === 'eq' || operator === 'ne' ? [column, value, column, value] : [column, value]
    qb.whereRaw(sql, bindings)
  } else {
    qb.whereRaw(`?? ${COMPARE[operator]} ?::${cast}`, [column, value])
  }
}

/** Lets a list field that is not a column (a user's roles) say how a row matches. */
export type CustomFilter = (qb: Knex.QueryBuilder, filter: Filter) => void

/** Narrows `qb` to the rows that pass every filter. */
export function applyFilters (qb: Knex.QueryBuilder, fields: ListFields, filters: Filter[], custom: Record<string, CustomFilter> = {}): Knex.QueryBuilder {
  for (const filter of filters) {
    const ownFilter = custom[filter.field]
    if (ownFilter) ownFilter(qb, filter)
    // keysetTable makes sure that a field without a filter of its own has a column.
    else condition(qb, fields[filter.field]!.column!, fields[filter.field]!.type, filter)
  }
  return qb
}

/** The keys a list's rows are ordered by: the sort's, then id, and each one's direction. */
export function orderKeys (fields: ListFields, idColumn: string, request: ListRequest, idType: FieldType = 'integer') {
  // keysetTable makes sure that every sortable field has a column.
  const keys = request.sort.map(({ field, descending }) => ({ field, column: fields[field]!.column!, type: fields[field]!.type, descending }))
  if (keys.at(-1)?.field !== 'id') keys.push({ field: 'id', column: idColumn, type: idType, descending: keys.at(-1)?.descending ?? false })
  return keys
}

/**
 * Orders `qb` by the keys and, after a cursor, keeps the rows that follow it. Keys all in
 * one direction compare as one row value, `(dob, id) < ($1, $2)`, which an index on
 * `(dob, id)` serves in either direction; mixed directions expand to
 * `a >= $1 and (a > $1 or (a = $1 and (b < $2 or (b = $2 and id > $3))))`.
 */
export function applyKeyset (qb: Knex.QueryBuilder, keys: ReturnType<typeof orderKeys>, after: ListRequest['after']): Knex.QueryBuilder {
  if (after !== undefined) {
    const values = [...after.values, after.id]
    const operator = (descending: boolean) => descending ? '<' : '>'
    if (keys.every(key => key.descending === keys[0]!.descending)) {
      const columns = keys.map(() => '??').join(', ')
      const bound = keys.map(key => `?::${CASTS[key.type]}`).join(', ')
      qb.whereRaw(`(${columns}) ${operator(keys[0]!.descending)} (${bound})`, [...keys.map(key => key.column), ...values])
    } else {
      let sql = ''
      const bindings: Knex.RawBinding[] = []
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i]!
        const cast = `?::${CASTS[key.type]}`
        sql = sql === ''
          ? `?? ${operator(key.descending)} ${cast}`
          : `(?? ${operator(key.descending)} ${cast} or (?? = ${cast} and ${sql}))`
        bindings.unshift(...(i === keys.length - 1 ? [key.column, values[i]!] : [key.column, values[i]!, key.column, values[i]!]))
      }
      // Implied by the rest, and a range an index on the first key can start from.
      const [first] = keys
      qb.whereRaw(`?? ${operator(first!.descending)}= ?::${CASTS[first!.type]}`, [first!.column, values[0]!])
      qb.whereRaw(sql, bindings)
    }
  }
  for (const key of keys) qb.orderBy(key.column, key.descending ? 'desc' : 'asc')
  return qb
}

/**
 * A filter on what a row holds in another table (a user's roles): `subquery` finds the held
 * rows whose value is among `?::text[]`; `eq` and `in` keep the rows that hold one, `ne` those
 * that hold none.
 */
export function holdsFilter (subquery: string): CustomFilter {
  return (qb, { operator, value }) => {
    const values = (Array.isArray(value) ? value : [value]).map(String)
    qb.whereRaw(`${operator === 'ne' ? 'not ' : ''}exists (${subquery})`, [values])
  }
}
