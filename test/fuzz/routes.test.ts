import t from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { build, routesOf } from '../helper.js'
import { bearer, insertClient, userWithRoles } from '../routes/api/accounts.js'
import { ada } from '../routes/students/fixtures.js'
import { body, contentType, type Schema } from './arbitraries.js'

const TABLES = ['students', 'clients', 'roles', 'role_permissions', 'users', 'user_roles', 'revoked_tokens']

async function snapshot (app: FastifyInstance) {
  return JSON.stringify(await Promise.all(TABLES.map(table => app.knex(table).select().orderByRaw('1, 2'))))
}

interface Operation { method: string, path: string, schema: Schema }

t.test('every write, fuzzed from its own schema: 2xx or a documented 4xx, never 5xx, and no 4xx changes a row', async t => {
  const plain = await build(t)
  const limits = { ...plain.config.auth.rateLimit, perIp: 1_000_000, perEmail: 1_000_000, notFoundPerIp: 1_000_000 }
  const app = await build(t, { db: plain.config.db, auth: { ...plain.config.auth, rateLimit: limits } })
  const admin = await userWithRoles(app, ['Admin'])
  const ids: Record<string, number> = {
    students: (await app.inject({ method: 'POST', url: '/students', payload: ada })).json().id,
    clients: await insertClient(app),
    roles: (await app.rolesRepository.findByNames(['User']))[0]!.id,
    users: (await userWithRoles(app, ['User'])).id
  }

  const document = (await app.inject({ url: '/documentation/json' })).json()
  const operations: Operation[] = []
  for (const [path, methods] of Object.entries<Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>(document.paths)) {
    for (const [method, operation] of Object.entries(methods)) {
      const schema = operation.requestBody?.content['application/json']?.schema
      if (schema) operations.push({ method: method.toUpperCase(), path, schema })
    }
  }
  t.equal(operations.length, routesOf(app).filter(route => route.schema?.body).length, 'every operation that takes a body')

  // Path ids: one that exists, one that does not, or anything at all.
  const id = (path: string) => fc.oneof(
    fc.constant(String(ids[path.split('/').at(-2)!] ?? 1)),
    fc.constant('999999'),
    fc.string({ maxLength: 12 }).map(encodeURIComponent)
  )
  const request = fc.constantFrom(...operations).chain(operation => fc.record({
    operation: fc.constant(operation),
    id: id(operation.path),
    body: body(operation.schema, document.components.schemas),
    contentType
  }))

  const seen = new Map<number, number>()
  await fc.assert(fc.asyncProperty(request, async ({ operation, id, body, contentType }) => {
    const before = await snapshot(app)
    const res = await app.inject({
      method: operation.method as 'POST',
      url: operation.path.replace('{id}', id),
      headers: { ...bearer(admin.token), ...(contentType !== undefined && { 'content-type': contentType }) },
      payload: JSON.stringify(body) ?? 'null'
    })
    seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1)
    if (res.statusCode >= 500) throw new Error(`${operation.method} ${operation.path}: ${res.statusCode} ${res.body}`)
    if (res.statusCode >= 400) {
      const error = res.json()
      if (error.success !== false || error.statusCode !== res.statusCode) throw new Error(`not the error body: ${res.body}`)
      if (await snapshot(app) !== before) throw new Error(`${operation.method} ${operation.path} answered ${res.statusCode} but changed rows`)
    }
  }), { numRuns: Number(process.env.FUZZ_RUNS ?? 400) })

  t.comment(`statuses: ${JSON.stringify([...seen].sort())}`)
  t.ok([...seen.keys()].some(code => code < 300), 'some requests succeeded')
  t.ok([...seen.keys()].some(code => code >= 400), 'some were refused')
})
