import t from 'tap'
import { SerializerSelector } from '@fastify/fast-json-stringify-compiler'
import type { AnySchema } from 'ajv'
import { buildValidator, invalidRows, latestToday } from '../../../lib/http/validation.js'
import { build, routesOf, sharedSchemasOf } from '../../helper.js'

t.test('latestToday: the date in UTC+14, which moves on at 10:00 UTC, whichever way time goes', async t => {
  const at = (iso: string) => latestToday(Date.parse(iso))
  t.equal(at('2026-11-21T09:59:59.999Z'), '2026-11-21', 'just before midnight in UTC+14')
  t.equal(at('2026-11-21T10:00:00.000Z'), '2026-11-22', 'midnight in UTC+14')
  t.equal(at('2026-11-22T09:59:59.999Z'), '2026-11-22', 'the same day, worked out once')
  t.equal(at('2026-11-22T10:00:00.000Z'), '2026-11-23', 'the next day')
  t.equal(at('2026-11-21T09:00:00.000Z'), '2026-11-21', 'a clock set back')
  t.equal(at('2024-02-28T10:00:00.000Z'), '2024-02-29', 'a leap day')
  t.equal(latestToday(), new Date(Date.now() + 14 * 3600_000).toISOString().slice(0, 10), 'now, by default')
})

t.test('invalidRows knows only a batch\'s body as its schema checked it: a copy of one throws, never reads as all valid', async t => {
  t.throws(() => invalidRows([{ email: 'not checked' }]), /Not a batch's body/)
})

t.test('a route\'s validator is compiled at its first request, not when the app is built: a schema ajv refuses throws only then', async t => {
  const schema = { type: 'object', properties: { code: { type: 'string', format: 'no-such-format' } } }
  const validator = buildValidator({})({ schema, httpPart: 'body', method: 'POST', url: '/x' }) as (data: unknown) => unknown
  t.throws(() => validator({ code: 'x' }), /unknown format "no-such-format"/)
})

t.test('every route\'s request and response schemas compile, as start-up no longer compiles them', async t => {
  const app = await build(t)
  const serializers = SerializerSelector()
  const refused: string[] = []
  let compiled = 0
  const compile = (what: string, compiling: () => unknown) => {
    try {
      compiling()
      compiled++
    } catch (error) {
      refused.push(`${what}: ${(error as Error).message}`)
    }
  }
  // A part of several media types has a schema for each, as Fastify compiles them.
  const schemasOf = (part: { content?: Record<string, { schema: AnySchema }> }) => part.content === undefined ? [part as AnySchema] : Object.values(part.content).map(content => content.schema)
  for (const route of routesOf(app)) {
    const { url, schema } = route
    const method = String(route.method)
    const shared = sharedSchemasOf(route) as Record<string, AnySchema>
    const validators = buildValidator(shared)
    for (const httpPart of ['body', 'querystring', 'params', 'headers'] as const) {
      const part = schema?.[httpPart] as { content?: Record<string, { schema: AnySchema }> } | undefined
      for (const each of part === undefined ? [] : schemasOf(part)) {
        const validate = validators({ schema: each, httpPart, method, url }) as (data: unknown) => unknown
        compile(`${method} ${url} ${httpPart}`, () => validate({}))
      }
    }
    for (const [httpStatus, response] of Object.entries((schema?.response ?? {}) as Record<string, { content?: Record<string, { schema: AnySchema }> }>)) {
      for (const each of schemasOf(response)) compile(`${method} ${url} ${httpStatus}`, () => serializers(shared, {})({ schema: each, method, url, httpStatus }))
    }
  }
  t.same(refused, [], 'none refused')
  t.ok(compiled > 1000, `${compiled} compiled`)
})
