import type { Attributes } from '@opentelemetry/api'
import { ATTR_DB_OPERATION_NAME, ATTR_DB_QUERY_TEXT, ATTR_DB_SYSTEM_NAME, DB_SYSTEM_NAME_VALUE_POSTGRESQL } from '@opentelemetry/semantic-conventions'

/**
 * The attributes of a span of one SQL statement, in the stable database conventions
 * (db.system.name, db.query.text, db.operation.name: what were db.system, db.statement and
 * db.operation). The text is the statement's, with its `$n` or `?` parameters: values are
 * never recorded, they may be personal data or secrets.
 */
export function sqlAttributes (text: string): Attributes {
  return {
    [ATTR_DB_SYSTEM_NAME]: DB_SYSTEM_NAME_VALUE_POSTGRESQL,
    [ATTR_DB_QUERY_TEXT]: text,
    [ATTR_DB_OPERATION_NAME]: operation(text)
  }
}

/** The statement's command, `SELECT`, `INSERT`, …, `WITH` for a CTE: its first word. */
function operation (text: string): string {
  return text.trimStart().split(/\s/, 1)[0]!.toUpperCase()
}
