import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyRequest {
    /** Fires when HANDLER_TIMEOUT passes before the reply is sent. */
    handlerTimer: NodeJS.Timeout | null
  }
}

/** The error a request answered too late gets; plugins/errors.ts makes it a 503 with Retry-After. */
export class HandlerTimeoutError extends Error {
  override name = 'HandlerTimeoutError'
  readonly statusCode = 503
}

function expire (request: FastifyRequest, reply: FastifyReply, ms: number): void {
  // Answered, or answering (a slow download is the socket timeouts' business), or the client is gone.
  if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return
  reply.send(new HandlerTimeoutError(`${request.method} ${request.url} took over ${ms} ms`))
}

/**
 * How long requests take. HANDLER_TIMEOUT: a request not answered in time gets 503 with
 * Retry-After (a database that stops answering, say); the handler runs on, and what it
 * answers late is dropped. SLOW_REQUEST: a request answered slower is logged as a warning.
 *
 * Fastify's own `handlerTimeout` does the first with an AbortController per request, which it
 * aborts as every request closes (fastify/fastify#7033): the DOMException of each abort cost
 * 17 of a POST's 138 µs of CPU, and kept requests alive long enough to add 37 MB of peak RSS.
 * Nothing here reads `request.signal`, so a timer is all it takes.
 */
export default fp(async (fastify) => {
  const { handler: timeoutMs, slowRequest: slowMs } = fastify.config.timeouts
  fastify.decorateRequest('handlerTimer', null)
  fastify.addHook('onRequest', (request, reply, done) => {
    request.handlerTimer = setTimeout(expire, timeoutMs, request, reply, timeoutMs)
    done()
  })
  fastify.addHook('onResponse', (request, reply, done) => {
    clearTimeout(request.handlerTimer!)
    const ms = reply.elapsedTime
    if (ms >= slowMs) {
      request.log.warn({ method: request.method, url: request.url, statusCode: reply.statusCode, responseTime: Math.round(ms) }, 'slow request')
    }
    done()
  })
}, { name: 'request-timing', dependencies: ['config'] })
