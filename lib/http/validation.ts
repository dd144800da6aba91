import { Ajv, type AnySchema, type ErrorObject, type Options, type ValidateFunction } from 'ajv'
import type { DataValidateFunction, DataValidationCxt } from 'ajv/dist/types/index.js'
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

const DECIMAL_INTEGER = /^-?\d+$/

function createAjv (options: Options): Ajv {
  const ajv = new Ajv({ allErrors: true, useDefaults: true, removeAdditional: false, ...options })
  addFormats.default(ajv)
  // OpenAPI annotations that validation ignores.
  ajv.addKeyword({ keyword: 'example' })
  ajv.addKeyword({ keyword: BATCH })
  ajv.addKeyword({ keyword: IMPORT_FILE })
  // A calendar day PostgreSQL can store (from year 1) that has begun somewhere already.
  const pastDate: ((enabled: boolean, value: string) => boolean) & { errors?: Partial<ErrorObject>[] } =
    (_enabled, value) => {
      const message = value > latestToday() ? 'must not be in the future' : value < '0001-01-01' ? 'must not be before 0001-01-01' : undefined
      pastDate.errors = message ? [{ keyword: 'x-past-date', message, params: {} }] : []
      return message === undefined
    }
  ajv.addKeyword({ keyword: 'x-past-date', type: 'string', errors: true, validate: pastDate })
  // A list of values in one string, `3,5,8` (a filter's `in`): split, each value checked and
  // coerced as its schema says, and the string replaced by the array of them. Generated
  // clients send it as a string: inside a deepObject parameter, they send no arrays.
  ajv.addKeyword({
    keyword: 'x-comma-separated',
    type: 'string',
    modifying: true,
    errors: true,
    compile (items: AnySchema & { type?: string }) {
      const check = ajv.compile({ type: 'array', items, minItems: 1, maxItems: MAX_LIST })
      const validate: DataValidateFunction = (data: string, context?: DataValidationCxt) => {
        const values: unknown[] = data.split(',')
        const failure = items.type === 'integer' && values.findIndex(value => !DECIMAL_INTEGER.test(value as string))
        const problem = typeof failure === 'number' && failure >= 0
          ? `value ${failure + 1} must be integer`
          : check(values) ? undefined : describe(check.errors![0]!)
        validate.errors = problem ? [{ keyword: 'x-comma-separated', message: problem, params: {} }] : []
        if (problem) return false
        context!.parentData[context!.parentDataProperty] = values
        return true
      }
      return validate
    }
  })
  return ajv
}

/** The largest number of values a comma-separated list takes. */
export const MAX_LIST = 100

/** What is wrong with a list, from the first error of its values: `value 2 must be integer`. */
function describe (error: ErrorObject): string {
  if (error.keyword === 'maxItems') return `must have at most ${String(error.params.limit)} values`
  return `value ${Number(error.instancePath.slice(1)) + 1} ${error.message}`
}

/** Path, query and header schemas are TypeBox objects; a query parameter may be an object of scalars. */
interface QuerySchema { type?: string, properties: Record<string, QuerySchema> }

/** What each parameter of a query schema is: an array, an integer, or an object of members that are. */
interface Kind { array?: boolean, integer?: boolean, members?: Map<string, Kind> }

function kindOf (property: QuerySchema, nested = false): Kind {
  const members = property.type === 'object' && !nested
    ? new Map(Object.entries(property.properties).map(([name, member]) => [name, kindOf(member, true)]))
    : undefined
  return { array: property.type === 'array', integer: property.type === 'integer', members }
}

const error = (path: string[], keyword: string, message: string, params: Record<string, unknown> = {}): FastifySchemaValidationError =>
  ({ keyword, instancePath: path.map(key => `/${key}`).join(''), schemaPath: '', params, message })

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Before a query string is validated: an array parameter may arrive comma-separated (OpenAPI's
 * `form` style without explode: `sort=-dob,name`), and is split, or repeated (`sort=-dob&sort=name`,
 * what generated clients send); integers must be plain decimal digits; and a bracketed
 * parameter (`foo[eq]=1`, an object once parsed) must be one the schema knows, while other
 * unknown parameters are ignored (cache-busting keeps working). It looks at the parameters
 * the request holds only: a page's `limit` and `after` cost what they did before lists had filters.
 */
function prepareQuery (kinds: Map<string, Kind>, data: Record<string, unknown>): FastifySchemaValidationError[] {
  const errors: FastifySchemaValidationError[] = []
  const prepare = (holder: Record<string, unknown>, key: string, kind: Kind, path: string[]) => {
    const value = holder[key]
    if (kind.array && typeof value === 'string') holder[key] = value.split(',')
    if (kind.integer && typeof value === 'string' && !DECIMAL_INTEGER.test(value)) errors.push(error(path, 'type', 'must be integer', { type: 'integer' }))
    if (kind.members && isObject(value)) {
      for (const member of Object.keys(value)) {
        const memberKind = kind.members.get(member)
        if (memberKind) prepare(value, member, memberKind, [...path, member])
      }
    }
  }
  for (const key of Object.keys(data)) {
    const kind = kinds.get(key)
    if (kind) prepare(data, key, kind, [key])
    else if (isObject(data[key])) errors.push(error([], 'additionalProperties', 'is not allowed', { additionalProperty: key }))
  }
  return errors
}

/**
 * Builds the validators of every route from two ajv instances: bodies are checked
 * exactly as sent (no coercion, unknown properties rejected by the schemas), while
 * path and query values, which are always text on the wire, are coerced to the
 * schema's types — integers only from plain decimal digits, never "1e3" or "0x10".
 */
export function buildValidator (externalSchemas: Record<string, AnySchema>) {
  const shared = JSON.stringify(externalSchemas)
  let compiler = compilers.get(shared)
  if (compiler === undefined) compilers.set(shared, compiler = newCompiler(externalSchemas))
  const { validators, build } = compiler
  return (route: FastifyRouteSchemaDef<AnySchema>) => {
    const key = `${route.httpPart}\n${JSON.stringify(route.schema)}`
    let validator = validators.get(key)
    if (validator === undefined) validators.set(key, validator = compiledAtFirstUse(() => build(route)))
    return validator
  }
}

/**
 * A validator compiled when it is first called: a process compiles the validators of the
 * routes it serves, when it first serves them, not every route's at start-up (most of a
 * start's CPU, docs/performance.md). A schema ajv refuses would fail its route's requests
 * with a 500: test/lib/http/validation.test.ts compiles every route's.
 */
function compiledAtFirstUse (compile: () => Validator): Validator {
  let validator: Validator | undefined
  return (data: Record<string, unknown>) => {
    validator ??= compile()
    const result = validator(data)
    // Fastify reads the errors of a `false` from the function it holds: this one, not ajv's.
    return result === false ? { error: validator.errors } : result
  }
}

/**
 * The mark of a batch's body schema (an array of records): its rows are checked one by one,
 * and a row that fails does not fail the request. `invalidRows` tells the route which failed.
 */
export const BATCH = 'x-batch'
interface BatchSchema { [BATCH]: true, items: AnySchema, minItems?: number, maxItems?: number }

// The rows that failed each batch body's check, by index: what ajv said of each.
const rowErrors = new WeakMap<object, Map<number, FastifySchemaValidationError[]>>()

/**
 * The rows of a batch's body (a route whose body schema is marked BATCH) that its schema
 * refused, by index. Only the body itself was checked: any other array (a copy) throws.
 */
export function invalidRows (rows: readonly unknown[]): ReadonlyMap<number, FastifySchemaValidationError[]> {
  const refused = rowErrors.get(rows)
  if (refused === undefined) throw new Error('Not a batch\'s body as its schema checked it: pass the request\'s body itself')
  return refused
}

/** The validator of a batch's body: the array as a whole (its length), then each row alone. */
function batchValidator (ajv: Ajv, { items, minItems, maxItems }: BatchSchema): Validator {
  const whole = ajv.compile({ type: 'array', minItems, maxItems })
  const row = ajv.compile(items)
  return (data: Record<string, unknown>) => {
    if (!whole(data)) return { error: whole.errors as FastifySchemaValidationError[] }
    const refused = new Map<number, FastifySchemaValidationError[]>()
    const rows = data as unknown as unknown[]
    for (let index = 0; index < rows.length; index++) {
      if (!row(rows[index])) refused.set(index, row.errors as FastifySchemaValidationError[])
    }
    rowErrors.set(rows, refused)
    return { value: rows }
  }
}

/**
 * The mark of an import's body schema: a file streamed, which the route reads and checks a row
 * at a time (plugins/app/import-writes.ts); its schema only describes it, and checks nothing.
 */
export const IMPORT_FILE = 'x-import-file'

/** A route part's validator, as Fastify's schema controller takes it. */
type Validator = ((data: Record<string, unknown>) => unknown) & { errors?: unknown }
interface Compiler { validators: Map<string, Validator>, build: (route: FastifyRouteSchemaDef<AnySchema>) => Validator }

/**
 * The validators compiled in this process, by the shared schemas and then by each schema's
 * text: the service builds its app once, but a process that builds it again and again (a test
 * file builds it for each test) would otherwise spend most of each build in ajv's compiler.
 */
const compilers = new Map<string, Compiler>()

function newCompiler (externalSchemas: Record<string, AnySchema>): Compiler {
  // Each made when a validator first needs it, with the shared schemas.
  let exact: Ajv | undefined
  let coercing: Ajv | undefined
  const withShared = (ajv: Ajv) => {
    for (const schema of Object.values(externalSchemas)) ajv.addSchema(schema)
    return ajv
  }

  const build = ({ schema, httpPart }: FastifyRouteSchemaDef<AnySchema>): Validator => {
    if (httpPart === 'body') {
      if ((schema as Record<string, unknown>)[IMPORT_FILE] === true) return (data: Record<string, unknown>) => ({ value: data })
      exact ??= withShared(createAjv({ coerceTypes: false }))
      return (schema as BatchSchema)[BATCH] === true ? batchValidator(exact, schema as BatchSchema) : exact.compile(schema) as Validator
    }

    coercing ??= withShared(createAjv({ coerceTypes: true }))
    const validate = coercing.compile(schema)
    const kinds = new Map(Object.entries((schema as QuerySchema).properties).map(([name, property]) => [name, kindOf(property)]))
    return (data: Record<string, unknown>) => {
      const errors = prepareQuery(kinds, data)
      if (errors.length > 0) return { error: errors }
      return validate(data) ? { value: data } : { error: validate.errors as FastifySchemaValidationError[] }
    }
  }
  return { validators: new Map(), build }
}

// The validators of single records outside a route's body (an import's rows), by schema.
const recordValidators = new WeakMap<object, ValidateFunction>()
let recordAjv: Ajv | undefined

/**
 * The check of one record against `schema` (a create's body, self-contained), as a route's
 * body is checked: exact, no coercion. Its `errors` are ajv's, as Fastify's are.
 */
export function recordValidator (schema: AnySchema & object): ValidateFunction {
  let validate = recordValidators.get(schema)
  if (validate === undefined) {
    recordAjv ??= createAjv({ coerceTypes: false })
    recordValidators.set(schema, validate = recordAjv.compile(schema))
  }
  return validate
}
