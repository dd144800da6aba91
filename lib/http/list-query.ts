import type { KeyObject } from 'node:crypto'
import { Type, type TSchema } from '@sinclair/typebox'
import { openCursor, type PageStart } from './cursor.js'
import { InvalidFields } from './invalid-fields.js'
import { MAX_LIST } from './validation.js'
import { DEFAULT_PAGE, INT_MAX, INT_MIN, MAX_ID, MAX_PAGE, MAX_POSITION } from './limits.js'
import { timestampInput, YEAR_PATTERN } from './timestamps.js'

/** The types a list's fields are filtered and sorted as. */
export type FieldType = 'integer' | 'bigint' | 'text' | 'date' | 'timestamp' | 'boolean'

const COMPARISONS = ['eq', 'ne', 'gt', 'gte', 'lt', 'lte', 'in'] as const
const TEXT_SEARCH = ['contains', 'starts_with'] as const
export type Operator = typeof COMPARISONS[number] | typeof TEXT_SEARCH[number]

/** What a list offers of one field: filters on it, and sorting by it if `sortable`. */
export interface ListField {
  type: FieldType
  /**
   * The SQL column it filters and sorts on, as the list's query names it (`u.name`); its
   * last part is the name the row has it under. None for a field the list's table filters
   * its own way (a user's `role`: keysetTable's `customFilters`), which cannot sort.
   */
  column?: string
  sortable?: boolean
  /** Only these operators. */
  operators?: readonly Operator[]
  /** What the field is, for the OpenAPI document, when its name does not say it. */
  description?: string
}

export type ListFields = Record<string, ListField>

/** One condition of a list's query: `age[gte]=18`. `in` carries a list of values. */
export interface Filter {
  field: string
  operator: Operator
  value: string | number | string[] | number[]
}

export interface SortKey {
  field: string
  descending: boolean
}

/** A list's query, validated: what `keysetTable(...).query` runs. */
export interface ListRequest {
  /** The list it is a request of (its route): a cursor holds for that list only. */
  scope: string
  limit: number
  filters: Filter[]
  /**
   * The order asked for, ending at `id` if it holds it; rows tied on all of it follow in id
   * order, in the direction of its last key. Empty: id order.
   */
  sort: SortKey[]
  /** Where the page begins: none for the first. */
  after?: PageStart | undefined
  count?: 'exact' | 'estimated' | undefined
}

/**
 * What PostgreSQL takes of each type, so that no value reaches it to be refused (a 500): text
 * without NUL; a date of a real calendar day (the format); a timestamp, also a real day and
 * time, of at most microseconds and an offset within ±15:59, as PostgreSQL's own limits are.
 */
const VALUES: Record<FieldType, () => TSchema> = {
  integer: () => Type.Integer({ minimum: INT_MIN, maximum: INT_MAX }),
  bigint: () => Type.Integer({ minimum: -MAX_POSITION, maximum: MAX_POSITION }),
  text: () => Type.String({ maxLength: 255, pattern: '^[^\\u0000]*$' }),
  date: () => Type.String({ format: 'date', pattern: `^${YEAR_PATTERN}-`, example: '2001-09-30' }),
  timestamp: () => timestampInput({ example: '2026-11-22T09:30:00.000Z' }),
  boolean: () => Type.Boolean()
}

function operatorsOf (field: ListField): readonly Operator[] {
  if (field.operators) return field.operators
  if (field.type === 'boolean') return ['eq', 'ne']
  return field.type === 'text' ? [...COMPARISONS, ...TEXT_SEARCH] : COMPARISONS
}

const OPERATOR_DESCRIPTIONS: Record<Operator, string> = {
  eq: 'equal to',
  ne: 'not equal to',
  gt: 'greater than',
  gte: 'greater than or equal to',
  lt: 'less than',
  lte: 'less than or equal to',
  in: `equal to one of these, comma-separated (at most ${MAX_LIST}; a text holding a comma cannot be one)`,
  contains: 'contains this, without regard to case',
  starts_with: 'starts with this, without regard to case'
}

/** The query parameter of one field: an object of its operators, sent as `name[gte]=18` (deepObject). */
function filterParameter (name: string, field: ListField): TSchema {
  const operators = operatorsOf(field)
  const properties = Object.fromEntries(operators.map(operator => {
    const value = VALUES[field.type]()
    // lib/http/validation.ts splits, checks and coerces the values of `in`.
    const schema = operator === 'in'
      ? Type.String({ maxLength: MAX_LIST * 41, 'x-comma-separated': value, description: OPERATOR_DESCRIPTIONS.in })
      : { ...value, description: OPERATOR_DESCRIPTIONS[operator] }
    return [operator, Type.Optional(schema)]
  }))
  return Type.Optional(Type.Object(properties, {
    additionalProperties: false,
    description: `Filters on \`${name}\`${field.description ? ` (${field.description})` : ''}: ${operators.map(operator => `\`${name}[${operator}]\``).join(', ')}. Several combine with AND.`
  }))
}

/** The values `sort` takes: each sortable field, and with a leading `-` for descending order. */
export function sortValues (fields: ListFields): string[] {
  return Object.keys(fields).filter(name => fields[name]!.sortable).flatMap(name => [name, `-${name}`])
}

/**
 * The query string of a list: paging, `sort`, `count`, `cursor`, and a filter parameter per
 * field. Arrays are sent comma-separated (lib/http/validation.ts splits them).
 */
export function listQuerySchema (fields: ListFields, defaultSort?: readonly string[], maxId = MAX_ID) {
  const sortable = sortValues(fields)
  const unsorted = defaultSort === undefined
    ? 'Without it, id order.'
    : `Without it (and without \`after\`, which pages in id order), \`${defaultSort.join(',')}\`.`
  return Type.Object({
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PAGE, default: DEFAULT_PAGE, description: 'How many records at the most' })),
    after: Type.Optional(Type.Integer({ minimum: 0, maximum: maxId, description: 'In id order (no `sort`): the records whose id is greater than this (keyset paging)' })),
    cursor: Type.Optional(Type.String({ maxLength: 8192, pattern: '^[A-Za-z0-9_-]+$', description: 'Where the page begins: the value the previous page\'s `Link: <…>; rel="next"` carries. Only valid with the same filters and sort.' })),
    // A list in id order only (the events) takes no sort.
    ...(sortable.length === 0
      ? {}
      : {
          sort: Type.Optional(Type.Array(Type.Unsafe<string>({ type: 'string', enum: sortable }), {
            minItems: 1,
            maxItems: sortable.length / 2,
            uniqueItems: true,
            description: 'The order, comma-separated (`-dob,name`); a leading `-` sorts descending. Records tied on every field given follow in id order, in the direction of the last. ' + unsorted
          }))
        }),
    count: Type.Optional(Type.Unsafe<'exact' | 'estimated'>({
      type: 'string',
      enum: ['exact', 'estimated'],
      description: 'Adds `X-Total-Count`, the number of records matching the filters: `exact` counts them (its cost grows with their number); `estimated` takes PostgreSQL\'s planner\'s estimate, as cheap at any size: exact on a list of fewer than 10,000 records (where the planner takes the whole list for fewer, the matches are counted, up to 10,000: 10,000 then means at least that many), otherwise as good as the table\'s statistics (see the README), and never less than the page\'s rows, plus one when a next page follows. The next page\'s link does not count again.'
    })),
    ...Object.fromEntries(Object.entries(fields).map(([name, field]) => [name, filterParameter(name, field)]))
  })
}

/** What a list's query string holds, once validated. */
export type ListQuery = Record<string, unknown> & { limit?: number, after?: number, cursor?: string, sort?: string[], count?: 'exact' | 'estimated' }

/**
 * The list's request from its validated query string. A cursor is signed with `secret`: one
 * that was altered, or made for other filters or another sort, gets 400.
 */
export function listRequest (scope: string, fields: ListFields, query: ListQuery, secret: KeyObject, defaultSort?: readonly string[]): ListRequest {
  const filters: Filter[] = []
  for (const [name, field] of Object.entries(fields)) {
    const operators = query[name] as Record<string, Filter['value']> | undefined
    if (operators === undefined) continue
    for (const operator of operatorsOf(field)) {
      const value = operators[operator]
      if (value !== undefined) filters.push({ field: name, operator, value })
    }
  }
  // A list in id order only has no `sort` in its schema, which leaves it unchecked.
  if (query.sort !== undefined && sortValues(fields).length === 0) throw new InvalidFields({ sort: ['is not taken: this list comes in id order only'] }, 'query string')
  // A list's own default order, unless `after` asks for id order.
  const sort = (query.sort ?? (query.after === undefined ? defaultSort : undefined) ?? []).map(value => value.startsWith('-')
    ? { field: value.slice(1), descending: true }
    : { field: value, descending: false })
  if (new Set(sort.map(key => key.field)).size < sort.length) throw new InvalidFields({ sort: ['names a field twice'] }, 'query string')
  // Ids are unique: what follows id in the order never matters.
  const byId = sort.findIndex(key => key.field === 'id')
  if (byId >= 0) sort.length = byId + 1
  // Validation fills in the default limit.
  const request: ListRequest = { scope, limit: query.limit!, filters, sort, count: query.count }
  if (query.cursor !== undefined && query.after !== undefined) {
    throw new InvalidFields({ cursor: ['cannot be given with after'] }, 'query string')
  }
  if (query.after !== undefined) {
    if (sort.length > 0) throw new InvalidFields({ after: ['is for id order: with sort, follow the cursor of the Link header'] }, 'query string')
    // after=0 is the first page, as no after is (a count may then be exact).
    if (query.after > 0) request.after = { values: [], id: query.after }
  }
  if (query.cursor !== undefined) request.after = openCursor(query.cursor, request, secret)
  return request
}
