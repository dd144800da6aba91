import { Ajv, type AnySchema, type ErrorObject, type Options } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifySchemaValidationError } from 'fastify'
import type { FastifyRouteSchemaDef } from 'fastify/types/schema.js'

const UTC_PLUS_14 = 14 * 3600_000
const DAY = 86_400_000
let today = ''
/** When `today` began in UTC+14, in ms since the epoch. */
let todayBegan = Number.NaN

/**
 * The last day that has begun somewhere on Earth (UTC+14), as `YYYY-MM-DD`. Worked out once
 * a day rather than on every validated date, which a Date on every POST would cost.
 */
export function latestToday (now = Date.now()): string {
  if (!(now >= todayBegan && now < todayBegan + DAY)) {
    const shifted = now + UTC_PLUS_14
    todayBegan = shifted - shifted % DAY - UTC_PLUS_14
    today = new Date(shifted).toISOString().slice(0, 10)
  }
  return today
}

function createAjv (options: Options): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, removeAdditional: false, ...options })
  addFormats.default(ajv)
  // OpenAPI annotations that validation ignores.
  ajv.addKeyword({ keyword: 'example' })
  // A calendar day PostgreSQL can store (from year 1) that has begun somewhere already.
  const pastDate: ((enabled: boolean, value: string) => boolean) & { errors?: Partial<ErrorObject>[] } =
    (_enabled, value) => {
      const message = value > latestToday() ? 'must not be in the future' : value < '0001-01-01' ? 'must not be before 0001-01-01' : undefined
      pastDate.errors = message ? [{ keyword: 'x-past-date', message, params: {} }] : []
      return message === undefined
    }
  ajv.addKeyword({ keyword: 'x-past-date', type: 'string', errors: true, validate: pastDate })
  return ajv
}

const DECIMAL_INTEGER = /^-?\d+$/

/**
 * Builds the validators of every route from two ajv instances: bodies are checked
 * exactly as sent (no coercion, unknown properties rejected by the schemas), while
 * path and query values, which are always text on the wire, are coerced to the
 * schema's types — integers only from plain decimal digits, never "1e3" or "0x10".
 */
export function buildValidator (externalSchemas: Record<string, AnySchema>) {
  const exact = createAjv({ coerceTypes: false })
  const coercing = createAjv({ coerceTypes: true })
  for (const schema of Object.values(externalSchemas)) {
    exact.addSchema(schema)
    coercing.addSchema(schema)
  }

  return ({ schema, httpPart }: FastifyRouteSchemaDef<AnySchema>) => {
    if (httpPart === 'body') return exact.compile(schema)

    const validate = coercing.compile(schema)
    // Path and query schemas are TypeBox objects.
    const properties = (schema as { properties: Record<string, { type?: string }> }).properties
    const integers = Object.keys(properties).filter(key => properties[key]!.type === 'integer')
    return (data: Record<string, unknown>) => {
      const errors: FastifySchemaValidationError[] = integers
        .filter(key => typeof data[key] === 'string' && !DECIMAL_INTEGER.test(data[key]))
        .map(key => ({ keyword: 'type', instancePath: `/${key}`, schemaPath: '', params: { type: 'integer' }, message: 'must be integer' }))
      if (errors.length > 0) return { error: errors }
      return validate(data) ? { value: data } : { error: validate.errors as FastifySchemaValidationError[] }
    }
  }
}
