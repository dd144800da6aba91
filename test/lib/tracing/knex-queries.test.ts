import { ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import knex from 'knex'
import t from 'tap'
import { knexConfig } from '../../../lib/db/knex-config.js'
import { activeTrace } from '../../../lib/tracing/active-trace.js'
import { traceKnexQueries } from '../../../lib/tracing/knex-queries.js'
import { createDatabase, testConfig } from '../../helper.js'

t.test('knex\'s queries in a trace are CLIENT spans under its span, the failed ones errors; others none', async t => {
  const exporter = new InMemorySpanExporter()
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  const tracer = provider.getTracer('test')
  const db = knex(knexConfig(testConfig(await createDatabase(t))))
  t.teardown(() => db.destroy())
  traceKnexQueries(db)

  await db.raw('select 1 as outside')
  const request = tracer.startSpan('request')
  await activeTrace.run({ tracer, context: trace.setSpan(ROOT_CONTEXT, request) }, async () => {
    await db.select(db.raw('2 as inside'))
    await t.rejects(db.raw('select * from no_such_table'))
    // BEGIN and COMMIT: no id pairs their events, so no span.
    await db.transaction(async trx => { await trx.raw('select 3 as in_transaction') })
  })
  request.end()

  const spans = exporter.getFinishedSpans().filter(span => span.name !== 'request')
  t.same(spans.map(span => span.attributes['db.query.text']), ['select 2 as inside', 'select * from no_such_table', 'select 3 as in_transaction'])
  for (const span of spans) {
    t.equal(span.parentSpanContext?.spanId, request.spanContext().spanId)
    t.match(span, { name: 'knex SELECT', attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'SELECT' } })
  }
  t.equal(spans[1]!.status.code, SpanStatusCode.ERROR)
  t.not(spans[0]!.status.code, SpanStatusCode.ERROR)
})
