import type { TObject, TSchema } from '@sinclair/typebox'
import pg from 'pg'
import { isoTimestamp } from './pg-types.js'
import fastJson from 'fast-json-stringify'
import { IDENTIFIER, rowBuilder } from './row-builder.js'
import type { RowMaker } from './statement-query.js'

const { builtins } = pg.types
type FastJsonSchema = Parameters<typeof fastJson>[0]

/** How a column's text, as PostgreSQL sends it, becomes JSON: an expression of `value`. */
const ENCODINGS: Record<string, { oids: number[], expression: string }> = {
  // PostgreSQL writes a smallint or an integer as JSON does.
  integer: { oids: [builtins.INT2, builtins.INT4], expression: 'value' },
  // `YYYY-MM-DD` (DateStyle ISO): nothing in it to escape.
  date: { oids: [builtins.DATE], expression: '\'"\' + value + \'"\'' },
  'date-time': { oids: [builtins.TIMESTAMPTZ], expression: '\'"\' + isoTimestamp(value) + \'"\'' },
  string: { oids: [builtins.TEXT, builtins.VARCHAR, builtins.BPCHAR], expression: 'JSON.stringify(value)' }
}

function encodingOf (property: TSchema): string {
  if (property.type === 'string' && (property.format === 'date' || property.format === 'date-time')) return property.format
  return property.type as string
}

/**
 * A function that writes one row, the text PostgreSQL sent, straight as the JSON of an object
 * schema: the schema's properties in its order, as fast-json-stringify would write the row
 * after lib/db/row-builder.ts made it an object, which it does in about two thirds of the time
 * (docs/performance.md).
 *
 * It writes integers, dates, timestamps and text itself. A row with a column it does not
 * write so (a boolean, a numeric, JSON, ...) or with a NULL in a column it writes goes the
 * usual way: made an object by lib/db/row-builder.ts, written by fast-json-stringify (Fastify's
 * serializer) compiled for the schema, which writes a NULL where the schema allows none as it
 * would for a route (`""`, `0`), with the schemas the schema's `$ref`s name. It refuses
 * (throws) a property the row lacks; columns the schema does not name are left out.
 */
export function jsonRowWriter (schema: TObject, fields: pg.FieldDef[], references: TSchema[] = []): (values: (string | null)[]) => string {
  const direct = Object.entries(schema.properties).map(([name, property]) => {
    const index = fields.findIndex(field => field.name === name)
    if (index < 0) throw new Error(`The row has no column ${name}`)
    if (!IDENTIFIER.test(name)) throw new Error(`Property name ${JSON.stringify(name)} is not a plain identifier`)
    const encoding = ENCODINGS[encodingOf(property)]
    return { name, index, encoding: encoding?.oids.includes(fields[index]!.dataTypeID) ? encoding : undefined }
  })
  const toObject = rowBuilder<unknown>(fields)
  const serialize = fastJson(schema as FastJsonSchema, { schema: Object.fromEntries(references.map(reference => [reference.$id!, reference as unknown as FastJsonSchema])) })
  const usual = (values: (string | null)[]) => serialize(toObject(values))
  if (direct.some(column => column.encoding === undefined)) return usual
  const anyNull = direct.map(({ index }) => `values[${index}] === null`).join(' || ')
  const parts = direct.map(({ name, index, encoding }, i) =>
    `'${i === 0 ? '{' : ','}"${name}":' + (value = values[${index}], ${encoding!.expression})`)
  // eslint-disable-next-line no-new-func -- one function a statement, made from its columns (see above)
  return new Function('isoTimestamp', 'usual', `return values => {
    if (${anyNull}) return usual(values)
    let value
    return ${parts.join(' + ')} + '}'
  }`)(isoTimestamp, usual)
}

/** A row written as JSON, and its id, by which pages follow one another. */
export interface JsonRow {
  id: number
  json: string
}

/** Rows of `schema` written as JSON (for `prepare`), each with its id; `references`, the schemas its `$ref`s name. */
export function jsonRows (schema: TObject, references: TSchema[] = []): RowMaker<JsonRow> {
  return fields => {
    const write = jsonRowWriter(schema, fields, references)
    const id = fields.findIndex(field => field.name === 'id')
    if (id < 0) throw new Error('The row has no column id')
    return values => ({ id: Number(values[id]), json: write(values) })
  }
}
