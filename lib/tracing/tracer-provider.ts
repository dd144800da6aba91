import type { Tracer } from '@opentelemetry/api'
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http'
import { resourceFromAttributes } from '@opentelemetry/resources'
import { BasicTracerProvider, BatchSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions'
import type { TracingConfig } from '../process/config.js'

/** A tracer whose spans go to the collector, and what flushes them and stops. */
export interface Tracing {
  tracer: Tracer
  /** Sends the spans not yet sent, then stops; for the app's close. */
  shutdown: () => Promise<void>
}

/**
 * The SDK's provider, exporting over OTLP/HTTP (JSON) in batches, so that a request never waits
 * on the collector. The rest of the SDK's variables apply as they read them (OTEL_TRACES_SAMPLER,
 * OTEL_BSP_*, OTEL_EXPORTER_OTLP_HEADERS, …); the collector's URL is the configuration's, so
 * that an app's own settings, not the process's, decide where its spans go. Not registered
 * globally: nothing outside the app takes spans from it.
 */
export function startTracing (config: TracingConfig): Tracing {
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: config.serviceName }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: config.endpoint }))]
  })
  return {
    tracer: provider.getTracer('student-records-api'),
    shutdown: () => provider.shutdown()
  }
}
