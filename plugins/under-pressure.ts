import fp from 'fastify-plugin'
import underPressure from '@fastify/under-pressure'
import { RETRY_AFTER_SECONDS, sendError } from './errors.js'

/**
 * Load shedding: while the event loop lags past MAX_EVENT_LOOP_DELAY, new requests are
 * answered 503 with Retry-After at once, instead of queueing up behind the others with
 * ever-growing latency. /health/ready says 503 too, so that a balancer sends work elsewhere;
 * /health/live still says 200, so that nobody restarts a process that is merely busy.
 */
export default fp(async (fastify) => {
  const { maxEventLoopDelay } = fastify.config.timeouts
  await fastify.register(underPressure, {
    maxEventLoopDelay,
    sampleInterval: Math.min(1_000, Math.max(5, Math.floor(maxEventLoopDelay / 4))),
    pressureHandler: (request, reply) => {
      if (request.url === '/health/live') {
        reply.code(200).send({ status: 'ok' })
      } else {
        reply.header('retry-after', String(RETRY_AFTER_SECONDS))
        sendError(reply, 503, 'The service is overloaded; try again later')
      }
    }
  })
}, { name: 'under-pressure', dependencies: ['config', 'errors'] })
