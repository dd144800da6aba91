import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route's own time limit in place of HANDLER_TIMEOUT: an import's, IMPORT_TIMEOUT. */
    timeoutMs?: number
  }
  interface FastifyRequest {
    /** Fires when HANDLER_TIMEOUT passes before the reply is sent. */
    handlerTimer: NodeJS.Timeout | null
    /** Writes of this request under way (`guardWrite`): while any is, the time limit does not answer. */
    writesInFlight: number
    /** The time limit answered 503: no write of this request may start any more. */
    timedOut: boolean
    /**
     * Runs a database write (a statement, or a whole transaction) so that the time limit's 503
     * means it did not happen: once the limit has answered, the write does not start; while it
     * runs, the limit does not answer, and the write's own answer comes, bounded by the
     * database's time limits (DB_ACQUIRE_TIMEOUT, DB_STATEMENT_TIMEOUT) instead.
     */
    guardWrite: <T>(work: () => Promise<T>) => Promise<T>
  }
}

/** The error a request answered too late gets; plugins/app/errors.ts makes it a 503 with Retry-After. */
export class HandlerTimeoutError extends Error {
  override name = 'HandlerTimeoutError'
  readonly statusCode = 503
}

/**
 * How long requests take. HANDLER_TIMEOUT: a request not answered in time gets 503 with
 * Retry-After (a database that stops answering, say), unless a write of it is under way; the
 * handler runs on, and what it answers late is dropped. A request whose body has not all
 * arrived by then gets 408: the client's fault, not the server's (plugins/app/request-log.ts
 * logs what is slower than SLOW_REQUEST).
 *
 * Fastify's own `handlerTimeout` does the first with an AbortController per request, which it
 * aborts as every request closes: each abort's DOMException costs CPU and keeps requests alive
 * longer (docs/performance.md). Nothing here reads `request.signal`, so a timer is all it takes.
 */
export default fp(async (fastify) => {
  const { handler: handlerTimeoutMs } = fastify.config.timeouts

  function expire (request: FastifyRequest, reply: FastifyReply, timeoutMs: number): void {
    // Answered, or answering (a slow download is the socket timeouts' business), or the client is gone.
    if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return
    // Node's IncomingMessage says whether the body has all arrived (an injected request has no such flag).
    if (request.raw.complete === false) {
      // The rest of the body will not be read: the connection cannot serve another request.
      reply.header('connection', 'close')
      reply.send(fastify.httpErrors.requestTimeout(`The request was not received within ${timeoutMs} ms`))
      return
    }
    // A write under way answers for itself: a 503 now could be followed by its commit.
    if (request.writesInFlight > 0) return
    request.timedOut = true
    reply.send(new HandlerTimeoutError(`${request.method} ${request.url} took over ${timeoutMs} ms`))
  }

  fastify.decorateRequest('handlerTimer', null)
  fastify.decorateRequest('writesInFlight', 0)
  fastify.decorateRequest('timedOut', false)
  fastify.decorateRequest('guardWrite', async function <T> (this: FastifyRequest, work: () => Promise<T>): Promise<T> {
    if (this.timedOut) throw new HandlerTimeoutError(`${this.method} ${this.url} was answered 503 before its write began`)
    this.writesInFlight++
    try {
      return await work()
    } finally {
      this.writesInFlight--
    }
  })
  fastify.addHook('onRequest', (request, reply, done) => {
    const own = request.routeOptions.config.timeoutMs
    const timeoutMs = own ?? handlerTimeoutMs
    const timer = request.handlerTimer = setTimeout(expire, timeoutMs, request, reply, timeoutMs)
    // A client gone before its answer ends no response (onResponse does not run): a route's own
    // limit (an import's runs for minutes) would keep the request, and the process, that long.
    if (own !== undefined) reply.raw.once('close', () => clearTimeout(timer))
    done()
  })
  fastify.addHook('onResponse', (request, _reply, done) => {
    clearTimeout(request.handlerTimer!)
    done()
  })
}, { name: 'request-timing', dependencies: ['config', 'sensible', 'load-shedding'] })
