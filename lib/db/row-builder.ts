import type pg from 'pg'
import { types } from './pg-types.js'

/** A column or property name that generated code may hold without quoting. */
export const IDENTIFIER = /^[a-z_][a-z0-9_]*$/i

/**
 * A function that turns a row's values, the text PostgreSQL sent, into an object, each value
 * parsed by the service's type parsers (lib/db/pg-types.ts).
 *
 * pg makes each row by copying a template object and setting its properties by name, and
 * calls every type's parser from the same place. Every query of every table runs through
 * that code, so V8 can no longer specialise it. A function made for one query's columns gives
 * its rows a single shape and calls each parser from a place of its own, where V8 can inline
 * it (docs/performance.md).
 */
export function rowBuilder<Row> (fields: pg.FieldDef[]): (values: (string | null)[]) => Row {
  const parsers = fields.map(field => types.getTypeParser(field.dataTypeID, 'text'))
  const properties = fields.map(({ name }, i) => {
    // The columns are the query's own; a name that is not a plain identifier would need
    // quoting, and `__proto__` would set the row's prototype.
    if (!IDENTIFIER.test(name) || name === '__proto__') throw new Error(`Column name ${JSON.stringify(name)} is not a plain identifier`)
    return `${name}: values[${i}] === null ? null : parsers[${i}](values[${i}])`
  })
  // eslint-disable-next-line no-new-func -- one function a query, made from its columns (see above)
  return new Function('parsers', `return values => ({ ${properties.join(', ')} })`)(parsers)
}
