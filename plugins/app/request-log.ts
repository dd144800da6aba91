import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { REQUEST_ID_HEADER } from '../../lib/http/request-id.js'

/** What a request's line tells: enough to find it, and the id that its other lines carry (reqId). */
const line = (request: FastifyRequest, reply: FastifyReply) => ({
  method: request.method,
  route: request.routeOptions.url,
  url: request.url,
  statusCode: reply.statusCode,
  responseTime: Math.round(reply.elapsedTime)
})

/**
 * Each request's id goes back in its answer's X-Request-Id (lib/http/request-id.ts makes it):
 * a client quoting it finds the request's log lines, which all carry it as `reqId`. A request
 * is logged once it is answered when it failed or took long: a 5xx as an error (a 503, the
 * service's or the database's load, as a warning), a 4xx at info (a route that does not exist
 * at debug: a scanner's probes would fill the logs), a 2xx or 3xx slower than SLOW_REQUEST as
 * a warning. Requests that went well are not logged: at thousands a second the lines would
 * cost more than the requests. plugins/app/errors.ts logs the cause of a 5xx.
 */
export default fp(async (fastify) => {
  const slowMs = fastify.config.timeouts.slowRequest
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.header(REQUEST_ID_HEADER, request.id)
    done()
  })
  fastify.addHook('onResponse', (request, reply, done) => {
    const status = reply.statusCode
    if (status >= 500) {
      if (status === 503) request.log.warn(line(request, reply), 'request not served')
      else request.log.error(line(request, reply), 'request failed')
    } else if (status >= 400) {
      if (request.is404) request.log.debug(line(request, reply), 'no such route')
      else request.log.info(line(request, reply), 'request refused')
    // An event stream lasts as long as its client stays: it is not slow.
    } else if (reply.elapsedTime >= slowMs && !String(reply.getHeader('content-type')).startsWith('text/event-stream')) {
      request.log.warn(line(request, reply), 'slow request')
    }
    done()
  })
}, { name: 'request-log', dependencies: ['config'] })
