import { SpanKind, type Span } from '@opentelemetry/api'
import type { Knex } from 'knex'
import { activeTrace, failed } from './active-trace.js'
import { sqlAttributes } from './sql-span.js'

/** What knex's query events tell of a query: its id, and its SQL. */
interface KnexQuery {
  __knexQueryUid?: string
  sql: string
}

/**
 * A CLIENT span under the request's for each query knex runs in a request (the prepared
 * statements make theirs in lib/db/statement-query.ts), from knex's documented query events:
 * 'query' as it is sent, 'query-response' or 'query-error' as it ends. Only the queries knex
 * builds carry the id that pairs those events; a transaction's BEGIN and COMMIT have none
 * and no end event, and get no span. Listened to only with tracing on.
 */
export function traceKnexQueries (knex: Knex): void {
  const running = new Map<string, Span>()
  knex.on('query', (query: KnexQuery) => {
    const active = activeTrace.getStore()
    if (active === undefined || query.__knexQueryUid === undefined) return
    const attributes = sqlAttributes(query.sql)
    running.set(query.__knexQueryUid, active.tracer.startSpan(`knex ${attributes['db.operation.name'] as string}`, { kind: SpanKind.CLIENT, attributes }, active.context))
  })
  const end = (query: KnexQuery, error?: unknown) => {
    const span = running.get(query.__knexQueryUid!)
    if (span === undefined) return
    running.delete(query.__knexQueryUid!)
    if (error !== undefined) failed(span, error)
    span.end()
  }
  knex.on('query-response', (_response: unknown, query: KnexQuery) => end(query))
  knex.on('query-error', (error: unknown, query: KnexQuery) => end(query, error))
}
