import type { TObject, TSchema } from '@sinclair/typebox'
import type pg from 'pg'
import { isoTimestamp } from './pg-types.js'

/** A field that needs quotes (RFC 4180): one holding a comma, a quote or a line break, or blank at an end. */
const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/

/** A text as a CSV field: quoted, its quotes doubled, where it needs it. */
export function csvField (text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

/** The CSV header line of an object schema: its properties, in its order. */
export function csvHeader (schema: TObject): string {
  return `${Object.keys(schema.properties).map(csvField).join(',')}\r\n`
}

/** How a property's value, as PostgreSQL's text, becomes its CSV field: as its JSON answer shows it. */
function fieldWriter (property: TSchema): (text: string) => string {
  if (property.type === 'string' && property.format === 'date-time') return isoTimestamp
  if (property.type === 'string' && property.format !== 'date') return csvField
  // Numbers and `YYYY-MM-DD` dates: nothing in them to quote.
  return text => text
}

/**
 * A function that writes one row, the text PostgreSQL sent, as a CSV line (RFC 4180, CRLF) of
 * an object schema's properties in its order, each as the JSON answers show it (timestamps in
 * ISO 8601 UTC); a NULL is an empty field.
 */
export function csvRowWriter (schema: TObject, fields: pg.FieldDef[]): (values: (string | null)[]) => string {
  const columns = Object.entries(schema.properties).map(([name, property]) => {
    const index = fields.findIndex(field => field.name === name)
    if (index < 0) throw new Error(`The row has no column ${name}`)
    return { index, write: fieldWriter(property) }
  })
  return values => {
    let line = ''
    for (let i = 0; i < columns.length; i++) {
      const { index, write } = columns[i]!
      const value = values[index] as string | null
      line += (i === 0 ? '' : ',') + (value === null ? '' : write(value))
    }
    return line + '\r\n'
  }
}
