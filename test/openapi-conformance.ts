import { Ajv, type ValidateFunction } from 'ajv'
import addFormats from 'ajv-formats'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import type { Test } from 'tap'

interface Document {
  components: { headers?: Record<string, { required?: boolean }> }
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: object }>, headers?: Record<string, { $ref?: string, required?: boolean }> }> }>>
}

interface Checker { ajv: Ajv, validators: Map<string, ValidateFunction> }

// The response checks compiled in this process, by the document's text: a test file builds an
// app for each test, nearly always with the same document, and ajv's compiling would be most
// of each build's checking.
const checkers = new Map<string, Checker>()

function checkerOf (document: Document): Checker {
  const text = JSON.stringify(document)
  let checker = checkers.get(text)
  if (checker === undefined) {
    const ajv = new Ajv({ strict: false, allErrors: true })
    addFormats.default(ajv)
    checkers.set(text, checker = { ajv, validators: new Map() })
  }
  return checker
}

/**
 * An onSend hook that holds every response the tests see to the OpenAPI document the app
 * serves: the route, method and status must be documented, the headers it says are always
 * there must be, and the body must match the documented schema. Anything else fails the test.
 */
export function conformToOpenApi (t: Test, app: FastifyInstance) {
  // The document and its checks, once the app answers its first request (its routes are all in then).
  let state: { document: Document, checker: Checker } | undefined

  return async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const route = request.routeOptions.url
    // HEAD and CORS preflights (OPTIONS) are not operations of the document.
    if (route === undefined || request.method === 'HEAD' || request.method === 'OPTIONS' || route.startsWith('/documentation')) return payload
    if (state === undefined) {
      const document = app.swagger() as unknown as Document
      state = { document, checker: checkerOf(document) }
    }
    const { document, checker: { ajv, validators } } = state
    const path = route.replace(/:(\w+)/g, '{$1}')
    const label = `${request.method} ${path} → ${reply.statusCode}`
    const operation = document.paths[path]?.[request.method.toLowerCase()]
    const response = operation?.responses[String(reply.statusCode)]
    if (!response) {
      t.fail(`${label} is not in the OpenAPI document`)
      return payload
    }
    // The headers the document says every such answer carries (X-Request-Id, Retry-After).
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const { required } = header.$ref === undefined ? header : document.components.headers?.[header.$ref.slice('#/components/headers/'.length)] ?? {}
      if (required === true && reply.getHeader(name) === undefined) t.fail(`${label} lacks ${name}, which the document says it carries`)
    }
    // A documented body of another type (an event stream) is held to its form by its own tests.
    const type = String(reply.getHeader('content-type') ?? '').split(';')[0]!
    if (type !== 'application/json' && response.content?.[type] !== undefined) return payload
    const schema = response.content?.['application/json']?.schema
    if (!schema) {
      // Fastify drops any payload of a 204 (the student tests see the empty body).
      if (reply.statusCode !== 204 && payload !== '' && payload !== undefined) t.fail(`${label} has a body the document does not describe`)
      return payload
    }
    let validate = validators.get(label)
    if (!validate) {
      validate = ajv.compile({ ...schema, components: document.components })
      validators.set(label, validate)
    }
    if (!validate(JSON.parse(String(payload)))) {
      t.fail(`${label} does not match the document: ${ajv.errorsText(validate.errors)}`)
    }
    return payload
  }
}
