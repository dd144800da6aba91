import type { Test } from 'tap'
import fc from 'fast-check'
import type { FastifyInstance } from 'fastify'
import { routesOf } from '../helper.js'
import { bearer } from '../routes/api/accounts.js'
import { body, conditionHeaders, contentType, resolved, valid, type Schema } from './arbitraries.js'
import { fuzzRuns } from './runs.js'

interface Operation { method: string, path: string, schema: Schema }

export interface WriteFuzzing {
  /** A token that may do every write. */
  token: string
  /**
   * For each collection (the path's segment before `{id}`), the id of a row that exists; 1 for
   * the others. A body's `<collection without its s>_id` refers to it (`courses`: `course_id`).
   */
  ids: Record<string, number>
  /** Which paths of the document to fuzz: all by default. */
  paths?: (path: string) => boolean
}

/** The seed of the plain valid bodies: any fixed one (a fast-check update may sample others). */
const PLAIN_SEED = 38

/**
 * Fuzzes every write operation of the document (those with a JSON body) from its own schema:
 * first each is sent a plain valid body and reaches its write; then random requests, each
 * answered 2xx or a documented 4xx in the error body, never 5xx, and no 4xx changes a row.
 * Every answer is held to the OpenAPI document too (test/helper.ts).
 */
export async function fuzzWrites (t: Test, app: FastifyInstance, { token, ids, paths = () => true }: WriteFuzzing) {
  // Every table, a new resource's too, but the migrations', the attempt counters (which
  // count refused attempts on purpose) and what the webhooks' dispatcher writes meanwhile (the
  // deliveries of the events of earlier writes, and whether an endpoint is failing); of the
  // audit log, all but failed logins' entries.
  const { rows } = await app.knex.raw<{ rows: { name: string }[] }>(`select table_name as name from information_schema.tables
    where table_schema = current_schema() and table_type = 'BASE TABLE' and table_name not like 'knex\\_%'
      and table_name not in ('rate_limits', 'feed_readers', 'webhook_deliveries', 'webhook_attempts')`)
  const tables = rows.map(row => row.name)
  const rowsOf = (table: string) => table === 'audit_log'
    ? app.knex(table).whereNot('action', 'login-failed')
    : table === 'webhooks' ? app.knex(table).select(app.knex.raw('id, url, types, description, secret, previous_secret, enabled')) : app.knex(table)
  // Without `last_used_at` (a session's, a key's): written beside a request at most once a
  // minute, whatever its answer, so that a run past a minute would see a refusal change it.
  const snapshot = async () => JSON.stringify(await Promise.all(tables.map(table => rowsOf(table).orderByRaw('1, 2'))),
    (key, value: unknown) => key === 'last_used_at' ? undefined : value)
  const document = (await app.inject({ url: '/documentation/json' })).json()
  const operations: Operation[] = []
  for (const [path, methods] of Object.entries<Record<string, { requestBody?: { content: Record<string, { schema: Schema }> } }>>(document.paths)) {
    if (!paths(path)) continue
    for (const [method, operation] of Object.entries(methods)) {
      const schema = operation.requestBody?.content['application/json']?.schema
      if (schema) operations.push({ method: method.toUpperCase(), path, schema })
    }
  }
  const documentedPath = (url: string) => url.replace(/:(\w+)/g, '{$1}')
  // An import's body is a file, not JSON (test/fuzz/imports.test.ts fuzzes those).
  const takesJson = (body: unknown) => body !== undefined && !(typeof body === 'object' && body !== null && 'content' in body)
  t.equal(operations.length, routesOf(app).filter(route => takesJson(route.schema?.body) && paths(documentedPath(route.url))).length, 'every operation that takes a JSON body')

  // Path ids: one that exists, one that does not, or anything at all.
  const existingId = (path: string) => String(ids[path.split('/').at(-2)!] ?? 1)
  const id = (path: string) => fc.oneof(
    fc.constant(existingId(path)),
    fc.constant('999999'),
    fc.string({ maxLength: 12 }).map(encodeURIComponent)
  )
  const references = Object.fromEntries(Object.entries(ids).map(([collection, id]) => [`${collection.replace(/s$/, '')}_id`, id]))
  const request = fc.constantFrom(...operations).chain(operation => fc.record({
    operation: fc.constant(operation),
    id: id(operation.path),
    body: body(operation.schema, document.components.schemas, references),
    contentType,
    conditions: conditionHeaders
  }))

  // The random requests below are mostly refused (a few 2xx in 400 for a small resource), so
  // that the fuzzing reaches the writes is checked first, without chance: each operation, sent
  // plain with the first of a fixed sequence of valid bodies that it takes, succeeds; those that
  // ask for a credential no generated body can know (a login's password, a refresh token, a
  // password reset's or an address verification's token, the current password, a second
  // step's token, a passkey ceremony's, an enrolment's first code) may refuse it, and only it.
  const asksForCredentials = (operation: Operation) => /\/(login|login\/mfa|login\/passkey|token\/refresh|password\/reset|email\/verify|profile\/passkeys|profile\/reauthenticate|mfa\/totp\/confirm)$/.test(operation.path) ||
    'current_password' in (resolved(operation.schema, document.components.schemas).properties ?? {})
  const CREDENTIAL_REFUSALS = new Set(['invalid_credentials', 'invalid_refresh_token', 'invalid_reset_token', 'invalid_verification_token', 'invalid_mfa_token', 'invalid_passkey_token', 'mfa_not_enrolled'])
  // A current password left out is asked for (the session may stand for it: "Step-up"), on its field alone.
  const askedForThePassword = (answer: { code?: unknown, data?: unknown }) => answer.code === 'invalid_body' &&
    JSON.stringify(Object.keys(answer.data ?? {})) === '["current_password"]'
  const reachedTheWrite = (operation: Operation, statusCode: number, answer: { code?: unknown, data?: unknown }) => statusCode < 300 ||
    (asksForCredentials(operation) && (CREDENTIAL_REFUSALS.has(answer.code as string) || askedForThePassword(answer)))
  for (const operation of operations) {
    const bodies = fc.sample(valid(operation.schema, document.components.schemas, '', references), { numRuns: 20, seed: PLAIN_SEED })
    const answers: string[] = []
    let reached = false
    for (const body of bodies) {
      const res = await app.inject({
        method: operation.method as 'POST',
        url: operation.path.replace('{id}', existingId(operation.path)),
        headers: { ...bearer(token), 'content-type': 'application/json' },
        payload: JSON.stringify(body)
      })
      answers.push(`${res.statusCode} ${res.body.slice(0, 200)}`)
      reached = reachedTheWrite(operation, res.statusCode, res.json())
      if (reached) break
    }
    t.ok(reached, `${operation.method} ${operation.path} takes a valid body (${answers.length} tried)`, { answers })
  }

  const seen = new Map<number, number>()
  await fc.assert(fc.asyncProperty(request, async ({ operation, id, body, contentType, conditions }) => {
    // The mails of earlier requests sent, and what they write (a reset's token) written.
    await app.mail.settled()
    const before = await snapshot()
    const res = await app.inject({
      method: operation.method as 'POST',
      url: operation.path.replace('{id}', id),
      headers: { ...bearer(token), ...conditions, ...(contentType !== undefined && { 'content-type': contentType }) },
      payload: JSON.stringify(body) ?? 'null'
    })
    seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1)
    if (res.statusCode >= 500) throw new Error(`${operation.method} ${operation.path}: ${res.statusCode} ${res.body}`)
    if (res.statusCode >= 400) {
      const error = res.json()
      if (error.success !== false || error.statusCode !== res.statusCode) throw new Error(`not the error body: ${res.body}`)
      if (await snapshot() !== before) throw new Error(`${operation.method} ${operation.path} answered ${res.statusCode} but changed rows`)
    }
  }), { numRuns: fuzzRuns(400) })

  t.comment(`statuses: ${JSON.stringify([...seen].sort())}`)
  t.ok([...seen.keys()].some(code => code >= 400), 'some were refused')
  // No random write took the token's rights away, which would have left the rest at 401 or 403.
  t.equal((await app.inject({ url: '/api/profile', headers: bearer(token) })).statusCode, 200, 'the token works still')
}
