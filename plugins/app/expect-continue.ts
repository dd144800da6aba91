import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'
import type { FastifyReply, preParsingHookHandler } from 'fastify'

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route tells a client that sent `Expect: 100-continue` to send its body itself
     * (`reply.continueBody()`), once it has checked what it can without it: a request it refuses
     * first gets the final answer alone, its body never sent. Any other route tells it as soon
     * as it begins to read the body.
     */
    continuesBody?: boolean
  }
  interface FastifyReply {
    /** Tells a client waiting with `Expect: 100-continue` to send its body (100 Continue); once, and only to such a client. */
    continueBody: () => void
  }
}

/**
 * `Expect: 100-continue` (RFC 9110, 10.1.1), as curl sends it with a large upload: the client
 * sends the body once told to, or not at all if the final answer comes first. Node tells it at
 * once unless the server listens for `checkContinue`; here each such request is served as any
 * other, and told when its route wants the body: an import, after its checks (permission, a
 * bulk slot, its Idempotency-Key), so that a refused upload of 100 MiB is never sent.
 */
export default fp(async (fastify) => {
  const waiting = new WeakSet<IncomingMessage>()
  fastify.server.on('checkContinue', (request: IncomingMessage, response) => {
    waiting.add(request)
    fastify.server.emit('request', request, response)
  })

  fastify.decorateReply('continueBody', function (this: FastifyReply) {
    if (!waiting.delete(this.request.raw)) return
    this.raw.writeContinue()
  })

  // Routes that may take a body, as they begin to read it (a route's own hook: a GET pays nothing).
  const continueUnlessRouteWill: preParsingHookHandler = (request, reply, payload, done) => {
    if (request.routeOptions.config.continuesBody !== true) reply.continueBody()
    done(null, payload)
  }
  fastify.addHook('onRoute', route => {
    const methods = [route.method].flat()
    if (methods.every(method => method === 'GET' || method === 'HEAD')) return
    route.preParsing = [continueUnlessRouteWill, ...[route.preParsing ?? []].flat()]
  })
}, { name: 'expect-continue' })
