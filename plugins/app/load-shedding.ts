import { monitorEventLoopDelay } from 'node:perf_hooks'
import fp from 'fastify-plugin'
import { UnavailableError } from './errors.js'

/** The period, in ms, of the timer whose delays measure the event loop's lag. */
const RESOLUTION = 10

/**
 * Load shedding: while the event loop lags past MAX_EVENT_LOOP_DELAY, new requests are
 * answered 503 with Retry-After at once, instead of queueing up behind the others with
 * ever-growing latency. /health/ready says 503 too, so that a balancer sends work elsewhere;
 * /health/live still says 200, so that nobody restarts a process that is merely busy. While
 * the service closes, every request is answered 503 (with `Connection: close`). It runs after
 * CORS's onRequest hook (a dependency), so that a browser can read the 503 and its Retry-After.
 *
 * The lag is the mean delay of a 10 ms timer over each sampling period, as
 * @fastify/under-pressure measures it. That plugin takes a period with no tick of the timer
 * as infinite lag, so that a single stall of a few hundred ms shed every request for a
 * period (test/plugins/app/load-shedding.test.ts). Here such a period lags by as much as the
 * sampler itself ran late.
 */
export default fp(async (fastify) => {
  const { maxEventLoopDelay } = fastify.config.timeouts
  const period = Math.min(1_000, Math.max(RESOLUTION, Math.floor(maxEventLoopDelay / 4)))

  const delays = monitorEventLoopDelay({ resolution: RESOLUTION })
  delays.enable()
  let lag = 0
  let due = performance.now() + period
  const sampler = setTimeout(() => {
    lag = Math.max(0, delays.count > 0 ? delays.mean / 1e6 - RESOLUTION : performance.now() - due)
    delays.reset()
    due = performance.now() + period
    sampler.refresh()
  }, period).unref()
  // Start-up (loading the routes, migrating) holds the loop by design: its lag says nothing of
  // the load to come, and the first requests were shed for it. The measure begins once the
  // service listens (a route's first request, compiling its schemas, holds it some 50 ms).
  fastify.addHook('onListen', async () => {
    delays.reset()
    lag = 0
    due = performance.now() + period
    sampler.refresh()
  })
  fastify.addHook('onClose', async () => {
    clearTimeout(sampler)
    delays.disable()
  })

  // Closing (SIGTERM): requests that still arrive on open connections get 503 in the error body
  // and the connection is closed (Fastify's own return503OnClosing answers in a body of its own).
  let closing = false
  fastify.addHook('preClose', (done) => {
    closing = true
    done()
  })

  fastify.addHook('onRequest', (request, reply, done) => {
    if (closing) {
      reply.header('connection', 'close')
      return done(new UnavailableError('The service is shutting down; try again'))
    }
    if (lag <= maxEventLoopDelay || request.url === '/health/live') return done()
    done(new UnavailableError('The service is overloaded; try again later'))
  })
}, { name: 'load-shedding', dependencies: ['config', 'errors', 'cors'] })
