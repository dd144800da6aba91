import type { TSchema } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import swaggerUi from '@fastify/swagger-ui'
import { packageInfo } from '../../lib/process/package-info.js'
import { DOCUMENTATION_PATH, TITLE } from '../../lib/http/documentation.js'
import { bodyOptional } from '../../lib/http/optional-body.js'

export interface OpenApiTag { name: string, description: string }

/** What a route folder declares of its own for the OpenAPI document. */
export interface ResourceDeclaration {
  /** The tag its operations carry, with its description. */
  tag?: OpenApiTag
  /**
   * Where its tag stands in the document, and so on the documentation page: the lowest first,
   * as a newcomer meets them (the students, then logging in); tags without one follow, in the
   * order their folders load.
   */
  order?: number
  /** The schemas its routes reference by $id: components of the document. */
  schemas?: TSchema[]
  /**
   * The resource whose changes it writes to the change feed (`student`), and the schema of its
   * record (named by $id, among `schemas`), which an event's `data` holds: the webhooks'
   * event types, and their payloads in the document's `webhooks`.
   */
  events?: { resource: string, record: TSchema }
}

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Declares a route folder's tag and shared schemas, on the folder's own instance: called
     * first thing in its routes plugin, so that nothing else lists them.
     */
    declareResource (declaration: ResourceDeclaration): void
    /** The resources whose changes the feed carries, each with its record's schema, as the route folders declared them. */
    followedResources: ReadonlyMap<string, TSchema>
  }
}

interface Parameter { in: string, schema?: { type?: string }, style?: string, explode?: boolean }
// @fastify/swagger gives every operation its responses (a default one where a route declares none).
interface Operation {
  parameters?: (Parameter | Reference)[]
  requestBody?: { required?: boolean, content: Record<string, { schema?: unknown }> }
  responses: Record<string, { headers?: Record<string, unknown> }>
}
interface Reference { $ref: string }
interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>
  webhooks?: Record<string, unknown>
  components?: { parameters?: Record<string, unknown>, headers?: Record<string, unknown> }
}

const REQUEST_ID_DESCRIPTION = 'The request\'s id: the `X-Request-Id` sent, when it is 1 to 128 of `A-Za-z0-9._-`, else one made for it. Every log line of the request and its audit entries carry it.'

/**
 * Every operation takes the header `name` (the component `component` of parameters), and
 * every answer carries it (the component of headers of the same name).
 */
function withHeader<T extends OpenApiDocument> (document: T, name: string, component: string, parameter: object, header: object): T {
  document.components = {
    ...document.components,
    parameters: { ...document.components?.parameters, [component]: { name, in: 'header', required: false, ...parameter } },
    headers: { ...document.components?.headers, [component]: header }
  }
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      operation.parameters = [...operation.parameters ?? [], { $ref: `#/components/parameters/${component}` }]
      for (const response of Object.values(operation.responses)) {
        response.headers = { ...response.headers, [name]: { $ref: `#/components/headers/${component}` } }
      }
    }
  }
  return document
}

const RATE_LIMIT_FIELDS = {
  'RateLimit-Policy': {
    description: 'With RATE_LIMIT or RATE_QUOTA set, the caller\'s policy, as draft-ietf-httpapi-ratelimit-headers-10 has it: the rate (`"default";q=600;w=60`: 600 units, a bucket refilled evenly over 60 s) and the daily quota (`"default-daily";q=10000;w=86400`). A request costs 1 unit; a page above 100 rows 1 more for each 100 (`limit=1000`: 10); `count=exact` 4 more; a batch 1 for each 10 rows; an import 1 for each 100 rows, charged as they are read, and an export 1 for each 1,000, charged once sent (the README\'s "Rate limits and quotas" has the table). A request\'s cost above the rate\'s count is the count. A 503 costs nothing and carries neither field.',
    required: false,
    schema: { type: 'string', example: '"default";q=600;w=60, "default-daily";q=10000;w=86400' }
  },
  RateLimit: {
    description: 'With a policy, what is left of it after this request: units (`r`) and seconds until more are in (`t`: the next unit of the rate, none while its bucket is full; the end of the UTC day for the quota). A 429 tells the same, with `Retry-After`.',
    required: false,
    schema: { type: 'string', example: '"default";r=598;t=1, "default-daily";r=9998;t=43210' }
  }
}

const RETRY_AFTER = {
  description: 'Seconds to wait before sending the request again: until the caller\'s rate limit has the units it asks, the day ends for its quota, or the service or its database may answer again',
  required: true,
  schema: { type: 'integer', minimum: 1, example: 3 }
}

/**
 * Every answer of an operation that spends a rate limit (it may answer 429) may carry its
 * fields (plugins/app/rate-limits.ts); a 429 and a 503 carry `Retry-After`.
 */
function withRateLimitFields<T extends OpenApiDocument> (document: T): T {
  document.components = { ...document.components, headers: { ...document.components?.headers, ...RATE_LIMIT_FIELDS, 'Retry-After': RETRY_AFTER } }
  const fields = Object.fromEntries(Object.keys(RATE_LIMIT_FIELDS).map(name => [name, { $ref: `#/components/headers/${name}` }]))
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations)) {
      for (const [status, response] of Object.entries(operation.responses)) {
        if (status === '429' || status === '503') response.headers = { ...response.headers, 'Retry-After': { $ref: '#/components/headers/Retry-After' } }
        // A 503 spends nothing and carries no fields (plugins/app/rate-limits.ts).
        if ('429' in operation.responses && status !== '503') response.headers = { ...response.headers, ...fields }
      }
    }
  }
  return document
}

/** Every operation takes an X-Request-Id and every answer carries one (lib/http/request-id.ts). */
function withRequestIds<T extends OpenApiDocument> (document: T): T {
  return withHeader(document, 'X-Request-Id', 'RequestId',
    { description: REQUEST_ID_DESCRIPTION, schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,128}$' } },
    { description: REQUEST_ID_DESCRIPTION, required: true, schema: { type: 'string', minLength: 1, maxLength: 128 } })
}

const TRACEPARENT_PATTERN = '^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$'

/**
 * Every operation takes a W3C `traceparent`, and with tracing on every answer carries one
 * (plugins/app/tracing.ts): documented whether this instance traces or not, as the document
 * is the same for every deployment.
 */
function withTraceContext<T extends OpenApiDocument> (document: T): T {
  return withHeader(document, 'traceparent', 'TraceParent',
    { description: 'The caller\'s span, in W3C Trace Context: with tracing on, the request\'s span is its child, in its trace (`tracestate` is carried along). Ignored with tracing off, or when malformed.', schema: { type: 'string', pattern: TRACEPARENT_PATTERN } },
    { description: 'With tracing on, the request\'s span, in W3C Trace Context: its trace id finds the trace in the tracing back-end, and the request\'s log lines carry it as `traceId`.', required: false, schema: { type: 'string', pattern: TRACEPARENT_PATTERN } })
}

/**
 * How query parameters are sent, as lib/http/query-string.ts and lib/http/validation.ts read
 * them: an object as `age[gte]=18` (deepObject), an array comma-separated (`sort=-dob,name`).
 */
function withQueryStyles<T extends OpenApiDocument> (document: T): T {
  for (const operations of Object.values(document.paths)) {
    for (const { parameters = [] } of Object.values(operations)) {
      for (const parameter of parameters as Parameter[]) {
        if (parameter.in !== 'query') continue
        if (parameter.schema?.type === 'object') Object.assign(parameter, { style: 'deepObject', explode: true })
        if (parameter.schema?.type === 'array') Object.assign(parameter, { style: 'form', explode: false })
      }
    }
  }
  return document
}

/** A body of optional fields only may be left out (lib/http/optional-body.ts): not required. */
function withOptionalBodies<T extends OpenApiDocument> (document: T): T {
  for (const operations of Object.values(document.paths)) {
    for (const { requestBody } of Object.values(operations)) {
      if (requestBody !== undefined && bodyOptional(requestBody.content['application/json']?.schema)) requestBody.required = false
    }
  }
  return document
}

const EVENT_ACTIONS = { created: 'made', updated: 'changed', deleted: 'deleted' } as const

/**
 * The document's `webhooks`: for each event type, what a webhook that takes it receives
 * (plugins/app/webhook-dispatcher.ts): the event as GET /api/events lists it, its `data` the
 * resource's record, with the Standard Webhooks headers.
 */
function withWebhooks<T extends OpenApiDocument> (document: T, followed: ReadonlyMap<string, TSchema>): T {
  const header = (name: string, description: string, schema: object) => ({ name, in: 'header', required: true, description, schema })
  const parameters = [
    header('webhook-id', 'The event\'s id: the same on every attempt, so that a receiver takes each event once', { type: 'string', pattern: '^[1-9][0-9]*$' }),
    header('webhook-timestamp', 'When the attempt was signed, in seconds since 1970: a receiver refuses one too old (5 minutes), so that a message captured cannot be replayed later', { type: 'string', pattern: '^[0-9]+$' }),
    header('webhook-signature', '`v1,` and the base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>` under the secret (its part after `whsec_`, base64-decoded); after a rotation, one such for each secret that signs, space-separated', { type: 'string' })
  ]
  const webhooks: Record<string, unknown> = {}
  for (const [resource, record] of [...followed].sort(([a], [b]) => a.localeCompare(b))) {
    for (const [action, done] of Object.entries(EVENT_ACTIONS)) {
      const type = `${resource}.${action}`
      webhooks[type] = {
        post: {
          operationId: `webhooks.${resource}.${action}`,
          tags: ['webhooks'],
          summary: `A ${resource} was ${done}`,
          description: `POSTed to each enabled webhook that takes \`${type}\`: \`data\` is the ${resource} ${action === 'deleted' ? 'before it was deleted' : 'after the change'}. Answer 2xx within WEBHOOK_TIMEOUT (10 s) once it is kept; anything else is tried again later.`,
          parameters,
          // Sent by the service, authenticated by its signature (the headers), not by a scheme.
          security: [],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  allOf: [{ $ref: '#/components/schemas/Event' }, {
                    type: 'object',
                    properties: { type: { const: type }, resource: { const: resource }, data: { $ref: `#/components/schemas/${String(record.$id)}` } },
                    required: ['type', 'resource', 'data']
                  }]
                }
              }
            }
          },
          responses: { '2XX': { description: 'Received: the event is not sent again' } }
        }
      }
    }
  }
  document.webhooks = webhooks
  return document
}

/**
 * The OpenAPI 3.1 document, built from the routes' TypeBox schemas and served at
 * /documentation/json and /documentation/yaml, with a browsable page at /documentation
 * whose assets are served from the package itself (no CDN). An app plugin, after the error
 * body's: the page's routes keep the error handler of when they were registered.
 */
export default fp(async (fastify) => {
  const declared: { tag: OpenApiTag, order: number }[] = []
  const followed = new Map<string, TSchema>()
  fastify.decorate('declareResource', function (this: FastifyInstance, { tag, order = Number.MAX_SAFE_INTEGER, schemas = [], events }: ResourceDeclaration) {
    if (tag) declared.push({ tag, order })
    for (const schema of schemas) this.addSchema(schema)
    if (events) followed.set(events.resource, events.record)
  })
  fastify.decorate('followedResources', followed)

  await fastify.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: TITLE,
        version: packageInfo.version,
        description: 'Students in two variants (`/api/v1/students`, `/students`), and an authenticated interface with users, roles, permissions and clients. Every error answers the `ErrorBody`.',
        license: { name: packageInfo.license, identifier: packageInfo.license }
      },
      servers: [{ url: '/', description: 'This server' }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A token from POST /api/login or /api/register' },
          apiKey: { type: 'http', scheme: 'bearer', bearerFormat: 'sk_…', description: 'An API key from POST /api/keys, as `Authorization: Bearer sk_…`: what its permissions and its owner\'s current ones both allow' }
        }
      }
    },
    // Shared schemas become components named by their $id (every one has one), not def-0, def-1, ...
    refResolver: { buildLocalReference: json => String(json.$id) },
    // The tags the route folders declared, by their order, else in the order they were declared
    // (a stable sort); swagger-ui shows them so, as no `tagsSorter` is given.
    transformObject: document => withWebhooks(withRateLimitFields(withTraceContext(withRequestIds(withOptionalBodies(withQueryStyles({
      ...(document as { openapiObject: OpenApiDocument }).openapiObject,
      tags: declared.toSorted((a, b) => a.order - b.order).map(({ tag }) => tag)
    }))))), followed)
  })
  // Its own CSP on its page, with the hashes of the page's inline scripts (the API's would refuse them).
  await fastify.register(swaggerUi, {
    routePrefix: DOCUMENTATION_PATH,
    staticCSP: true,
    // Less swagger-ui's `upgrade-insecure-requests`: served over plain HTTP by any name but
    // localhost (a container's), the browser fetched the page's scripts over HTTPS, found none,
    // and showed a blank page. Over HTTPS it changes nothing: every asset is the page's own.
    transformStaticCSP: (policy: string) => policy.replace(/\s*upgrade-insecure-requests;?/, ''),
    theme: { title: TITLE }
  })
}, { name: 'swagger', dependencies: ['compress', 'errors', 'schemas'] })
