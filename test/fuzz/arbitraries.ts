import fc from 'fast-check'

/** The subset of JSON Schema that the service's request bodies use. */
export interface Schema {
  $ref?: string
  type?: string
  enum?: unknown[]
  anyOf?: Schema[]
  properties?: Record<string, Schema>
  required?: string[]
  minProperties?: number
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  minimum?: number
  maximum?: number
  items?: Schema
  minItems?: number
}

const PERMISSIONS = ['client', 'role', 'user'].flatMap(resource => ['list', 'create', 'edit', 'delete'].map(action => `${resource}-${action}`))

/** Names of the things an array of strings refers to, by property name. */
const NAMES: Record<string, string[]> = {
  permission: PERMISSIONS,
  roles: ['Admin', 'User'],
  types: ['student', 'client', 'role', 'user'].flatMap(resource => ['created', 'updated', 'deleted'].map(action => `${resource}.${action}`))
}

const email = fc.tuple(fc.stringMatching(/^[a-z0-9]{1,20}$/), fc.constantFrom('example.com', 'example.org'))
  .map(([local, domain]) => `${local}@${domain}`)
const pastDate = fc.date({ min: new Date('1900-01-01'), max: new Date('2020-12-31'), noInvalidDate: true })
  .map(date => date.toISOString().slice(0, 10))
// Instants in the future (an API key's expiry must be).
const futureInstant = fc.date({ min: new Date('2040-01-01'), max: new Date('2099-12-31'), noInvalidDate: true })
  .map(date => date.toISOString())

/** The schema itself, or the component it refers to. */
export function resolved (schema: Schema, components: Record<string, Schema>): Schema {
  return schema.$ref ? components[schema.$ref.split('/').pop()!]! : schema
}

/** Ids of rows that exist, by the property that refers to them (`course_id`). */
export type References = Record<string, number>

/**
 * Values that the schema accepts (mostly: uniqueness in the database is not known here); a
 * property that refers to another row takes the id `references` gives it.
 */
export function valid (schema: Schema, components: Record<string, Schema>, name = '', references: References = {}): fc.Arbitrary<unknown> {
  if (schema.$ref) return valid(resolved(schema, components), components, name, references)
  if (Object.hasOwn(references, name)) return fc.constant(references[name])
  // A literal (TypeBox's `const`, which the OpenAPI 3.0 document writes as a one-value enum).
  if (schema.enum) return fc.constantFrom(...schema.enum)
  if (schema.anyOf) return fc.oneof(...schema.anyOf.map(option => valid(option, components, name, references)))
  switch (schema.type) {
    case 'object': {
      const properties = schema.properties ?? {}
      const record = fc.record(
        Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, valid(value, components, key, references)])),
        { requiredKeys: schema.required ?? [] }
      ) as fc.Arbitrary<Record<string, unknown>>
      return record
        .filter(body => Object.keys(body).length >= (schema.minProperties ?? 0))
        // The confirmation repeats the password.
        .map(body => ('c_password' in body && 'password' in body ? { ...body, c_password: body.password } : body))
    }
    case 'string':
      // A date's format says more than its pattern (which admits days no calendar has).
      if (schema.format === 'date') return pastDate
      if (schema.format === 'date-time') return futureInstant
      // Hosts that resolve to public addresses, or not at all here: a webhook takes both.
      if (schema.format === 'uri') return fc.constantFrom('https://example.com/hooks', 'https://hooks.example.org/in?source=students')
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern))
      if (schema.format === 'email') return email
      return fc.string({ minLength: Math.max(schema.minLength ?? 0, name.includes('password') ? 8 : 1), maxLength: Math.min(schema.maxLength ?? 40, 40) })
        .filter(text => text.trim().length > 0)
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1000, max: schema.maximum ?? 1000 })
    case 'array':
      // A batch: records, a few at a time.
      if (schema.items !== undefined && resolved(schema.items, components).type === 'object') {
        return fc.array(valid(schema.items, components, '', references), { minLength: Math.max(schema.minItems ?? 0, 1), maxLength: 4 })
      }
      return fc.subarray(NAMES[name] ?? [], { minLength: Math.min(schema.minItems ?? 0, NAMES[name]?.length ?? 0) })
    default:
      return fc.jsonValue()
  }
}

/** What attackers and broken clients send instead of a field's value. */
export const badValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue(),
  fc.constant('x'.repeat(40_000)),
  fc.constant('a\u0000b'),
  fc.constantFrom("' OR 1=1 --", "'; drop table students; --", '1; select pg_sleep(10)', '$1', '%s%s%s'),
  fc.constantFrom('\u202eevil', '𝕬𝖉𝖆', 'e\u0301', '\uFEFF', '\uD800', '\u0085'),
  fc.string({ unit: 'binary', maxLength: 50 }),
  fc.constantFrom(null, true, -1, 1e308, '20', [], {})
)

/** A valid body, one with one field broken, an extra key, or something else altogether. */
export function body (schema: Schema, components: Record<string, Schema>, references: References = {}): fc.Arbitrary<unknown> {
  const good = valid(schema, components, '', references) as fc.Arbitrary<Record<string, unknown>>
  const { items } = resolved(schema, components)
  // A batch: valid rows, rows with a field broken, and anything else, in any order.
  const rows = items === undefined ? [] : [fc.array(body(items, components, references), { minLength: 1, maxLength: 6 })]
  return fc.oneof(
    ...rows,
    good,
    // Valid too, but referring to any id: mostly rows that do not exist.
    valid(schema, components),
    fc.tuple(good, fc.string({ maxLength: 12 }), badValue).map(([value, key, bad]) => {
      const keys = Object.keys(value)
      return { ...value, [keys.length > 0 ? keys[key.length % keys.length]! : key]: bad }
    }),
    fc.tuple(good, fc.constantFrom('__proto__', 'constructor', 'id', 'deleted_at', 'token_generation'), badValue)
      .map(([value, key, bad]) => ({ ...value, [key]: bad })),
    fc.jsonValue()
  )
}

export const contentType = fc.constantFrom(
  'application/json', 'APPLICATION/JSON ;', ' application/json', '\tapplication/json', 'application/json; charset=utf-8',
  'application/json;charset=UTF-16', 'text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x',
  'application/json-patch+json', undefined
)

/** An entity tag as a client might send one: strong, weak, or with odd characters inside. */
const entityTag = fc.oneof(
  fc.nat({ max: 100_000 }).map(version => `"${version}"`),
  fc.string({ maxLength: 12 }).map(opaque => `"${opaque}"`),
  fc.string({ maxLength: 12 }).map(opaque => `W/"${opaque}"`)
)

/**
 * The headers of safe retries and conditional requests, each present or not: odd keys (empty,
 * too long, UUIDs) and odd If-Match values (`*`, lists of weak and strong tags, garbage).
 */
export const conditionHeaders = fc.record({
  'idempotency-key': fc.oneof(fc.uuid(), fc.string({ maxLength: 300 }), fc.constant('x'.repeat(256))),
  'if-match': fc.oneof(fc.constant('*'), fc.array(entityTag, { minLength: 1, maxLength: 4 }).map(tags => tags.join(', ')), fc.string({ maxLength: 20 }))
}, { requiredKeys: [] })
