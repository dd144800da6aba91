import t from 'tap'
import fc from 'fast-check'
import { build } from '../helper.js'
import { bearer, insertClient, userWithRoles } from '../routes/api/accounts.js'
import { ada } from '../routes/students/fixtures.js'
import { fuzzRuns } from './runs.js'

interface ParameterSchema { type?: string, enum?: string[], properties?: Record<string, ParameterSchema>, items?: ParameterSchema, format?: string, 'x-comma-separated'?: ParameterSchema }
interface Parameter { name: string, in: string, schema: ParameterSchema }
interface Operation { parameters?: Parameter[], responses: Record<string, { headers?: Record<string, unknown> }> }

/** What attackers and broken clients put where a value goes. */
const hostile = fc.constantFrom(
  '', ' ', ',', ',,', '-', '--', '\'', '\'; drop table students; --', '" or 1=1 --', '%', '_', '\\', '%00', 'a%00b', '%ZZ',
  '1e3', '0x10', '-0', '1.5', '2147483648', '-2147483649', '99999999999999999999', 'NaN', 'Infinity', 'null', 'true',
  '0000-01-01', '2000-02-30', '9999-12-31', '10000-01-01', '2000-01-01T25:00:00Z', '2000-01-01T00:00:00+99:00',
  '2000-01-01T00:00:00.123456789Z', '2026-01-01T00:00:00+16:00', '2026-01-01\u00a000:00:00Z', `2026-01-01T00:00:00.${'0'.repeat(200)}Z`, 'ö', '𝔘', '%F0%9F%92%A9', '[', ']', '[]', '{}', 'a'.repeat(300), '1,'.repeat(150) + '1'
// Sent as a client would put them in a URL: `%`, brackets and commas raw, what a URL cannot hold encoded.
).map(text => text.replace(/[ "'\\#&=+\u0080-\uffff]/gu, character => encodeURIComponent(character)))

/** A value the schema takes, roughly, or a hostile one. */
function value (schema: ParameterSchema): fc.Arbitrary<string> {
  const listed = schema['x-comma-separated']
  if (listed) return fc.array(value(listed), { minLength: 1, maxLength: 5 }).map(values => values.join(','))
  if (schema.enum) return fc.oneof(fc.constantFrom(...schema.enum), hostile)
  if (schema.type === 'integer') return fc.oneof(fc.integer({ min: -5, max: 200 }).map(String), hostile)
  if (schema.format === 'date') return fc.oneof(fc.constantFrom('1815-12-10', '2000-01-01'), hostile)
  if (schema.format === 'date-time') return fc.oneof(fc.constantFrom('2026-01-01T00:00:00Z', new Date().toISOString()), hostile)
  if (schema.type === 'boolean') return fc.oneof(fc.constantFrom('true', 'false'), hostile)
  return fc.oneof(fc.string({ maxLength: 8 }).map(encodeURIComponent), hostile)
}

/** One query parameter as sent: known or odd operators, repeated, nested, or plain. */
function part (parameter: Parameter): fc.Arbitrary<string> {
  const { name, schema } = parameter
  if (schema.type === 'object') {
    const operators = Object.keys(schema.properties ?? {})
    return fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...operators).chain(operator => value(schema.properties![operator]!).map(v => `${name}[${operator}]=${v}`)) },
      { weight: 1, arbitrary: fc.constantFrom('between', 'like', '0', '', '__proto__', 'eq][x', 'gte]').chain(operator => value({ type: 'string' }).map(v => `${name}[${operator}]=${v}`)) },
      { weight: 1, arbitrary: value({ type: 'string' }).map(v => `${name}=${v}`) },
      { weight: 1, arbitrary: value({ type: 'string' }).map(v => `${name}[eq][deeper]=${v}`) }
    )
  }
  if (schema.type === 'array') return fc.array(value(schema.items!), { minLength: 1, maxLength: 4 }).map(values => `${name}=${values.join(',')}`)
  if (name === 'cursor') return fc.oneof(fc.stringMatching(/^[A-Za-z0-9_-]{0,80}$/), hostile).map(v => `cursor=${v}`)
  return value(schema).map(v => `${name}=${v}`)
}

t.test('every list, fuzzed from its documented parameters: 2xx or a documented 4xx in the error body, never 5xx', async t => {
  const app = await build(t, config => { Object.assign(config.auth.rateLimit, { perIp: 1_000_000, perEmail: 1_000_000, notFoundPerIp: 1_000_000 }) })
  const admin = await userWithRoles(app, ['Admin'])
  await app.inject({ method: 'POST', url: '/students', payload: ada })
  await insertClient(app)
  const document = (await app.inject({ url: '/documentation/json' })).json()
  const gets = Object.entries<Record<string, Operation>>(document.paths).filter(([, operations]) => operations.get)
  const lists = gets
    .filter(([, operations]) => operations.get!.parameters?.some(parameter => parameter.name === 'limit'))
    .map(([path, operations]) => ({ path, parameters: operations.get!.parameters!.filter(parameter => parameter.in === 'query') }))
  // A list answers a page, with a Link to the next: each one is fuzzed, whichever resources there are.
  const paged = gets.filter(([, operations]) => operations.get!.responses['200']?.headers?.link).map(([path]) => path)
  t.ok(paged.length > 0, 'the document has lists')
  t.same(lists.map(list => list.path).sort(), paged.sort(), 'every list, by its parameters')

  const request = fc.constantFrom(...lists).chain(list => fc.record({
    path: fc.constant(list.path),
    parts: fc.array(fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...list.parameters).chain(part) },
      { weight: 1, arbitrary: fc.constantFrom('colour[eq]=red', '_=1', 'utm=x&utm=y', '[x]=1', 'a[=1', '%5B=1', '&&', '=') }
    ), { maxLength: 6 })
  }))
  const seen = new Map<number, number>()
  await fc.assert(fc.asyncProperty(request, async ({ path, parts }) => {
    const url = `${path}?${parts.join('&')}`
    const res = await app.inject({ url, headers: bearer(admin.token) })
    seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1)
    if (res.statusCode >= 500) throw new Error(`${url}: ${res.statusCode} ${res.body}`)
    if (res.statusCode >= 400) {
      const error = res.json()
      if (error.success !== false || error.statusCode !== res.statusCode || res.statusCode !== 400) throw new Error(`${url}: not a 400 in the error body: ${res.body}`)
    }
  }), { numRuns: fuzzRuns(1000) })
  t.comment(`statuses: ${JSON.stringify([...seen].sort())}`)
  t.ok(seen.has(200), 'some lists answered')
  t.ok(seen.has(400), 'some were refused')
})
