import { AsyncLocalStorage } from 'node:async_hooks'
import { SpanStatusCode, type Attributes, type Context, type Span, type SpanKind, type Tracer } from '@opentelemetry/api'

/** The tracer of the app that serves a request, and the context of the request's span. */
export interface ActiveTrace {
  tracer: Tracer
  context: Context
}

/**
 * The trace of the request being served, for the SQL and the hashing it causes to make their
 * spans under its span. The service's own store, not OpenTelemetry's global context manager:
 * apps of one process (the tests') trace or not each on its own, and with tracing off nothing
 * ever enters it, so `getStore()` stays a check of a flag (AsyncLocalStorage is enabled on its
 * first `run`) and the hot path pays nothing else.
 */
export const activeTrace = new AsyncLocalStorage<ActiveTrace>()

/** Runs `work` in a span of its own under the request's, ended when it settles; a failure marks it ERROR. */
export function inSpan<T> (active: ActiveTrace, name: string, kind: SpanKind, attributes: Attributes, work: () => Promise<T>): Promise<T> {
  const span = active.tracer.startSpan(name, { kind, attributes }, active.context)
  return work().then(result => {
    span.end()
    return result
  }, (error: unknown) => {
    failed(span, error)
    span.end()
    throw error
  })
}

/** Marks a span as failed by this error. */
export function failed (span: Span, error: unknown): void {
  span.recordException(error as Error)
  span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message })
}
