import fp from 'fastify-plugin'
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, defaultTextMapGetter, defaultTextMapSetter, trace } from '@opentelemetry/api'
import { ATTR_HTTP_REQUEST_METHOD, ATTR_HTTP_RESPONSE_STATUS_CODE, ATTR_HTTP_ROUTE, ATTR_URL_PATH } from '@opentelemetry/semantic-conventions'
import { activeTrace, type ActiveTrace } from '../../lib/tracing/active-trace.js'
import { traceKnexQueries } from '../../lib/tracing/knex-queries.js'

declare module 'fastify' {
  interface FastifyRequest {
    /** With tracing on, the tracer and the context of the request's span; null until it starts. */
    trace: ActiveTrace | null
  }
}

/** The header a W3C trace context comes in and its span's goes back out in. */
export const TRACEPARENT_HEADER = 'traceparent'

/** The attribute a span's request id is in: the X-Request-Id its log lines carry as reqId. */
export const ATTR_REQUEST_ID = 'http.request.id'

/**
 * OpenTelemetry traces (lib/process/config.ts says when they are on): a SERVER span for each
 * request, `GET /students/:id`, a child of the caller's when its `traceparent` names one, and
 * under it a span for each SQL statement (lib/db/statement-query.ts, lib/tracing/knex-queries.ts)
 * and each password hashed or verified (lib/auth/passwords.ts). The answer's `traceparent`
 * names the request's span, and its log lines carry the trace's id as traceId, so that a
 * client or a log finds the trace. The spans left are sent as the app closes.
 *
 * Off, no hook is added: the requests pay nothing, and the SQL and hashing only find that no
 * trace is active (lib/tracing/active-trace.ts); nor are the SDK and its exporter loaded, some
 * megabytes of memory and tens of milliseconds of start-up. A request answered before its
 * span starts (a CORS preflight, a request shed by plugins/app/load-shedding.ts) has no span.
 */
export default fp(async (fastify) => {
  const config = fastify.config.tracing
  if (config === null) return
  const [{ startTracing }, { W3CTraceContextPropagator }] = await Promise.all([import('../../lib/tracing/tracer-provider.js'), import('@opentelemetry/core')])
  const propagator = new W3CTraceContextPropagator()
  const { tracer, shutdown } = startTracing(config)
  fastify.addHook('onClose', async () => { await shutdown() })
  traceKnexQueries(fastify.knex)
  fastify.decorateRequest('trace', null)

  fastify.addHook('onRequest', (request, reply, done) => {
    const parent = propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter)
    const route = request.routeOptions.url
    const queryAt = request.url.indexOf('?')
    const span = tracer.startSpan(route === undefined ? request.method : `${request.method} ${route}`, {
      kind: SpanKind.SERVER,
      attributes: {
        [ATTR_HTTP_REQUEST_METHOD]: request.method,
        ...(route !== undefined && { [ATTR_HTTP_ROUTE]: route }),
        [ATTR_URL_PATH]: queryAt === -1 ? request.url : request.url.slice(0, queryAt),
        [ATTR_REQUEST_ID]: request.id
      }
    }, parent)
    const context = trace.setSpan(parent, span)
    request.trace = { tracer, context }
    request.log = request.log.child({ traceId: span.spanContext().traceId })
    reply.log = request.log
    const headers: Record<string, string> = {}
    propagator.inject(context, headers, defaultTextMapSetter)
    reply.header(TRACEPARENT_HEADER, headers[TRACEPARENT_HEADER])
    // What the hooks and the handler run from here on, SQL and hashing, is of this request's trace.
    activeTrace.run(request.trace, done)
  })

  // The body is read on the socket's events, outside the request's trace: the hooks from
  // here on and the handler run in it again.
  fastify.addHook('preHandler', (request, _reply, done) => {
    activeTrace.run(request.trace!, done)
  })

  fastify.addHook('onResponse', (request, reply, done) => {
    if (request.trace === null) return done()
    // Ended already if its client went away first (below): then OpenTelemetry ignores these.
    const span = trace.getSpan(request.trace.context)!
    span.setAttribute(ATTR_HTTP_RESPONSE_STATUS_CODE, reply.statusCode)
    if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR })
    span.end()
    done()
  })

  // A client that closes its connection before the answer: its span ends there, an error, so
  // that the trace shows the request (and what it ran until then) rather than losing it.
  fastify.addHook('onRequestAbort', (request, done) => {
    /* c8 ignore next -- a request answered before its span began (shed under load) whose client then went away mid-answer */
    if (request.trace === null) return done()
    const span = trace.getSpan(request.trace.context)!
    span.setStatus({ code: SpanStatusCode.ERROR, message: 'the client closed the connection before the answer' })
    span.end()
    done()
  })
}, { name: 'tracing', dependencies: ['config', 'knex', 'request-timing'] })
