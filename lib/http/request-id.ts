import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'

/** The header a request's id comes in and goes back out in. */
export const REQUEST_ID_HEADER = 'x-request-id'

/** What an incoming id may be: 1 to 128 of these characters, safe in logs and headers alike. */
const ACCEPTED = /^[A-Za-z0-9._-]{1,128}$/

/**
 * Fastify's `genReqId`: the caller's X-Request-Id when it is one the service accepts (a
 * balancer's or a client's, so that their logs and these tell of the same request), else a
 * new UUID. An id of other characters or length is replaced, not refused: the request is fine.
 */
export function requestId (request: IncomingMessage): string {
  const given = request.headers[REQUEST_ID_HEADER]
  return typeof given === 'string' && ACCEPTED.test(given) ? given : randomUUID()
}
