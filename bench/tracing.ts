/**
 * `npm run bench:tracing`: what a traced request costs with the service's own tracing
 * (plugins/app/tracing.ts, its SQL spans as lib/db/statement-query.ts makes them) against
 * `@fastify/otel` with `@opentelemetry/instrumentation-pg`, the maintained pair that could stand
 * in for it (docs/performance.md, "Libraries"). Each way is a process of its own (the pg
 * instrumentation patches the `pg` module of its process), a Fastify app answering
 * `GET /students/:id` with one named pg query, driven through `inject` for REQUESTS requests,
 * its CPU (user and system, its pg client's included) divided by them. Both export through the
 * same SDK pipeline (lib/tracing/tracer-provider.ts) to a local OTLP receiver. The ways take
 * turns for ROUNDS rounds; the medians are printed, µs a request.
 */
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createRequire } from 'node:module'
import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import knex from 'knex'
import type pg from 'pg'
import { SpanKind, context, type TracerProvider } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg'
import { benchDatabase, start, stop } from './harness.js'
import { startTracing } from '../lib/tracing/tracer-provider.js'
import { activeTrace, inSpan } from '../lib/tracing/active-trace.js'
import { sqlAttributes } from '../lib/tracing/sql-span.js'
import tracing from '../plugins/app/tracing.js'

const ROUNDS = Number(process.env.BENCH_REPEAT ?? 5)
const REQUESTS = 20_000
const WARMUP = 2_000
/** Requests in flight at once, as a few keep-alive clients would keep them. */
const CONCURRENCY = 8
const QUERY = { name: 'by-id', text: 'select $1::int as id, \'Student\' as name, 20 as age' }

const WAYS = {
  'no tracing': 'no spans, the baseline',
  'service (plugins/app/tracing.ts)': 'a SERVER span a request, a CLIENT span its query',
  '@fastify/otel + instrumentation-pg, request span only': 'instrumentHooks and instrumentHandler off: a request span, a query span',
  '@fastify/otel + instrumentation-pg, as installed': 'its defaults: a request span and a handler span (this app has no hooks to span), a query span'
} as const
type Way = keyof typeof WAYS

/** The app of one way, on `pool`; `way` decides what traces it. */
async function appOf (way: Way, pool: pg.Pool, provider: TracerProvider | undefined, endpoint: string): Promise<FastifyInstance> {
  const app = Fastify()
  if (way === 'service (plugins/app/tracing.ts)') {
    // What the plugin depends on, as the service's own plugins provide it.
    await app.register(fp(async instance => { instance.decorate('config', { tracing: { endpoint, serviceName: 'bench' } } as never) }, { name: 'config' }))
    await app.register(fp(async instance => { instance.decorate('knex', knex({ client: 'pg' })) }, { name: 'knex' }))
    await app.register(fp(async () => {}, { name: 'request-timing' }))
    await app.register(tracing)
  } else if (way !== 'no tracing') {
    const hooksAndHandler = way === '@fastify/otel + instrumentation-pg, as installed'
    const otel = new FastifyOtelInstrumentation({ instrumentHooks: hooksAndHandler, instrumentHandler: hooksAndHandler })
    otel.setTracerProvider(provider!)
    await app.register(otel.plugin())
  }
  // The service's way of running a query in its span (lib/db/statement-query.ts).
  const query = (values: unknown[]) => {
    const run = () => pool.query({ ...QUERY, values })
    const active = activeTrace.getStore()
    return active ? inSpan(active, 'SELECT', SpanKind.CLIENT, sqlAttributes(QUERY.text), run) : run()
  }
  app.get('/students/:id', async request => (await query([Number((request.params as { id: string }).id)])).rows[0])
  await app.ready()
  return app
}

/** In the child: µs of this process's CPU a request, the way named in argv. */
async function measure (way: Way): Promise<number> {
  const endpoint = process.env.OTLP_ENDPOINT!
  let provider: TracerProvider | undefined
  let flush = async () => {}
  if (way.startsWith('@fastify/otel')) {
    // The library's way: a global context manager, and pg patched as it is required.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
    const { tracer, shutdown } = startTracing({ endpoint, serviceName: 'bench' })
    provider = { getTracer: () => tracer }
    flush = shutdown
    const pgInstrumentation = new PgInstrumentation()
    pgInstrumentation.setTracerProvider(provider)
    pgInstrumentation.enable()
  }
  const { Pool } = createRequire(import.meta.url)('pg') as typeof pg
  const pool = new Pool({ connectionString: process.env.DATABASE_URL, max: CONCURRENCY })
  const app = await appOf(way, pool, provider, endpoint)
  let next = 0
  const drive = async (count: number) => {
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const response = await app.inject({ url: `/students/${++next}`, headers: { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' } })
        if (response.statusCode !== 200) throw new Error(`${way}: ${response.statusCode} ${response.body}`)
      }
    }))
    next = 0
  }
  await drive(WARMUP)
  const before = process.cpuUsage()
  await drive(REQUESTS)
  const used = process.cpuUsage(before)
  // The service's plugin sends its spans left as the app closes.
  await app.close()
  await flush()
  await pool.end()
  return (used.user + used.system) / REQUESTS
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!

if (process.argv[2] !== undefined) {
  console.log(await measure(process.argv[2] as Way))
  process.exit(0)
}

const { server, database, drop } = await benchDatabase()
const receiver = await start('OTLP receiver', ['--import', 'tsx', 'bench/servers/otlp-receiver.ts'], {})
try {
  const env = {
    ...process.env,
    DATABASE_URL: `postgres://${encodeURIComponent(server.user)}:${encodeURIComponent(server.password)}@${server.host}:${server.port}/${database}`,
    OTLP_ENDPOINT: `${receiver.url}/v1/traces`
  }
  const rounds: Record<Way, number[]> = Object.fromEntries(Object.keys(WAYS).map(way => [way, []])) as never
  const spansEach: Partial<Record<Way, number>> = {}
  const spansReceived = async () => ((await (await fetch(`${receiver.url}/spans`)).json()) as { spans: number }).spans
  for (let round = 0; round < ROUNDS; round++) {
    for (const way of Object.keys(WAYS) as Way[]) {
      const child = spawn(process.execPath, ['--import', 'tsx', 'bench/tracing.ts', way], { env, stdio: ['ignore', 'pipe', 'inherit'] })
      let out = ''
      child.stdout.on('data', chunk => { out += chunk })
      const before = await spansReceived()
      const [code] = await once(child, 'exit') as [number]
      if (code !== 0) throw new Error(`${way} exited with ${code}`)
      rounds[way].push(Number(out))
      spansEach[way] = (await spansReceived() - before) / (WARMUP + REQUESTS)
    }
    console.error(`round ${round + 1} of ${ROUNDS}: ${(Object.keys(WAYS) as Way[]).map(way => `${way} ${rounds[way].at(-1)!.toFixed(1)}`).join('; ')}`)
  }
  const baseline = median(rounds['no tracing'])
  console.log(`\nCPU µs a request, medians of ${ROUNDS} rounds of ${REQUESTS} requests (${CONCURRENCY} at once, inject):`)
  for (const [way, what] of Object.entries(WAYS) as [Way, string][]) {
    const us = median(rounds[way])
    console.log(`${way.padEnd(56)} ${us.toFixed(1).padStart(7)}  +${(us - baseline).toFixed(1).padStart(6)} over no tracing, ${spansEach[way]!.toFixed(2)} spans a request  (${what})`)
  }
} finally {
  await stop(receiver)
  await drop()
}
