import fp from 'fastify-plugin'
import type { FastifyRequest, FastifyReply } from 'fastify'
import { CodedError } from '../../lib/http/error-codes.js'

/** The methods an Allow header may name: those the routes take (OPTIONS is CORS's, below). */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']

/**
 * What reaches no route: 405 with `Allow` for a method the path does not take, 404 in the error
 * body for a path that does not exist, counted per client IP: a scanner walking the URL space
 * is answered 429 past NOT_FOUND_RATE_LIMIT_IP in a window. A 405 is not counted: its path
 * exists, and a wrong method is a client's mistake, not a walk of the URL space.
 */
export default fp(async (fastify) => {
  /** The methods a path takes, matched by the router as a request's URL is (params and all). */
  const allowed = (path: string) => METHODS.filter(method => fastify.findRoute({ method, url: path }) !== null)

  async function methodNotAllowed (request: FastifyRequest, reply: FastifyReply) {
    // HEAD and OPTIONS are answered as before: HEAD wherever GET is, by Fastify; OPTIONS (a
    // CORS preflight) by @fastify/cors where CORS_ORIGIN is set; 404 elsewhere.
    if (request.method === 'HEAD' || request.method === 'OPTIONS') return
    const path = request.url.split('?')[0]!
    const methods = allowed(path)
    if (methods.length === 0) return
    reply.header('allow', methods.join(', '))
    throw fastify.httpErrors.methodNotAllowed(`Method ${request.method} not allowed on ${path}; it takes ${methods.join(', ')}`)
  }

  fastify.setNotFoundHandler({
    preValidation: methodNotAllowed,
    preHandler: fastify.throttle('not-found', fastify.config.auth.rateLimit.notFoundPerIp)
  }, async (request) => {
    throw new CodedError('route_not_found', `Route ${request.method} ${request.url.split('?')[0]} not found`)
  })
}, { name: 'not-found', dependencies: ['errors', 'throttle', 'sensible'] })
