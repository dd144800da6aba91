import { STATUS_CODES } from 'node:http'
import fp from 'fastify-plugin'
import type { IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import { databaseBusy, databaseUnavailable, foreignKeyRefusal } from '../../lib/db/db-errors.js'
import { CodedError, codeOf, type ErrorCode } from '../../lib/http/error-codes.js'
import { InvalidFields, InvalidRows } from '../../lib/http/invalid-fields.js'
import { PreconditionFailedError } from './conditional-requests.js'
import { HandlerTimeoutError } from './request-timing.js'
import { SECURITY_HEADERS } from './security-headers.js'

/** Seconds a client should wait before retrying a 503 (database out of reach, timeout, overload). */
const RETRY_AFTER_SECONDS = 5

/** `{ "email": ["must match format \"email\""] }` from ajv's errors. */
export function fieldErrors (errors: FastifySchemaValidationError[], context: string): Record<string, string[]> {
  // A Map, since a field may be named `constructor` or `__proto__`.
  const fields = new Map<string, string[]>()
  for (const error of errors) {
    const path = error.instancePath.split('/').slice(1)
    let message = String(error.message)
    if (error.keyword === 'required') {
      path.push(String(error.params.missingProperty))
      message = 'is required'
    } else if (error.keyword === 'additionalProperties') {
      path.push(String(error.params.additionalProperty))
      message = 'is not allowed'
    } else if (error.keyword === 'minProperties') {
      message = 'must have at least one property'
    } else if (error.keyword === 'minLength' && error.params.limit === 1) {
      message = 'must not be empty'
    }
    // A query parameter is named as sent: `age[gte]`, `sort[1]`.
    const field = path.length === 0 ? context : context === 'querystring' ? path[0] + path.slice(1).map(key => `[${key}]`).join('') : path.join('.')
    fields.set(field, [...fields.get(field) ?? [], message])
  }
  return Object.fromEntries(fields)
}

const PARTS: Record<SchemaErrorDataVar, string> = {
  body: 'request body', querystring: 'query string', params: 'path', headers: 'headers'
}

/**
 * The contract's error body; a validation error's `param` is the first field its `data` names
 * (lib/http/error-codes.ts declares every `code`).
 */
export function errorBody (statusCode: number, code: ErrorCode, message: string, data?: Record<string, string[]>) {
  return { success: false, statusCode, error: STATUS_CODES[statusCode], code, message, ...(data && { param: Object.keys(data)[0], data }) }
}

/**
 * A 503 the service answers of its own accord (overloaded, shutting down), with Retry-After and
 * its message, logged at debug only: under overload, a line each would add to the load.
 */
export class UnavailableError extends Error {
  override name = 'UnavailableError'
  readonly statusCode = 503
}

function sendError (reply: FastifyReply, statusCode: number, code: ErrorCode, message: string, data?: Record<string, string[]>) {
  return reply.code(statusCode).send(errorBody(statusCode, code, message, data))
}

/**
 * Fastify's `frameworkErrors`: a URL the router cannot decode (`/students/%`) is answered
 * before any hook runs, so the security headers are set here.
 */
export function frameworkErrors (error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  request.log.info({ method: request.method, url: request.url, code: error.code }, 'request refused: a malformed URL')
  reply.headers(SECURITY_HEADERS)
  return sendError(reply, 400, 'malformed_url', 'The URL is malformed (a bad percent-encoding)')
}

/** What Node's HTTP parser refuses, as the client's fault: status, code and message. */
function parserError (code: string | undefined): [number, ErrorCode, string] {
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return [408, 'request_timeout', 'The request was not received in time']
  if (code === 'HPE_HEADER_OVERFLOW') return [431, 'headers_too_large', 'The request\'s headers (or URL) are larger than the limit']
  return [400, 'malformed_request', 'The request is not valid HTTP']
}

/**
 * Fastify's `clientErrorHandler`: a request Node's HTTP parser refuses (headers too large,
 * Transfer-Encoding with Content-Length, not HTTP at all) or that was not received in time is
 * answered on the socket itself, in the error body with the security headers, and the
 * connection closed. Logged at info: it is the client's doing.
 */
export function clientErrorHandler (this: FastifyInstance, error: Error & { code?: string }, socket: Duplex) {
  // Which of the two a client that left shows first is the network's timing.
  /* c8 ignore next */
  if (error.code === 'ECONNRESET' || socket.destroyed) return
  const [statusCode, code, message] = parserError(error.code)
  this.log.info({ code: error.code, statusCode }, 'request refused by the HTTP parser')
  /* c8 ignore next 4 -- a client that closed its side of the connection already */
  if (!socket.writable) {
    socket.destroy(error)
    return
  }
  socket.write(rawAnswer(statusCode, code, message))
  socket.destroy(error)
}

/** A whole HTTP answer in the error body, with the security headers, that closes its connection. */
function rawAnswer (statusCode: number, code: ErrorCode, message: string): string {
  const body = JSON.stringify(errorBody(statusCode, code, message))
  const headers = {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'content-length': String(Buffer.byteLength(body)),
    connection: 'close'
  }
  return `HTTP/1.1 ${statusCode} ${STATUS_CODES[statusCode]}\r\n${Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n${body}`
}

/**
 * A CONNECT request: Node hands it to the server's 'connect' listeners instead of routing it,
 * and closes the socket unanswered when there is none. The service is no proxy: answered as
 * any other method no route serves (404), then closed, since the socket has left HTTP's parser.
 */
export function connectHandler (this: FastifyInstance, request: IncomingMessage, socket: Duplex) {
  this.log.debug({ method: request.method, url: request.url }, 'CONNECT refused: no route serves it')
  // The socket has left the server's hands, and its error listener with it: a client that
  // resets the connection must not end the process.
  /* c8 ignore next -- only a client that resets the connection before reading the answer */
  socket.on('error', () => {})
  socket.end(rawAnswer(404, 'route_not_found', `Route CONNECT ${request.url!.split('?')[0]} not found`))
}

/**
 * One error body for every error of every route. 4xx errors say what was wrong; 5xx
 * errors say nothing of the internals (no SQL, stack or names), and are logged whole.
 */
export default fp(async (fastify) => {
  fastify.server.on('connect', connectHandler.bind(fastify))
  fastify.setErrorHandler(async (error: FastifyError, request, reply) => {
    if (error.validation) {
      const context = error.validationContext as SchemaErrorDataVar
      const data = fieldErrors(error.validation, context)
      const summary = Object.entries(data).map(([field, problems]) => `${field} ${problems.join(', ')}`).join('; ')
      request.log.debug({ validation: data }, 'invalid request')
      return sendError(reply, 400, context === 'body' ? 'invalid_body' : 'invalid_parameter', `Invalid ${PARTS[context]}: ${summary}`, data)
    }
    // The client left before its request had all arrived: nobody to answer, and no fault of the server's.
    if (request.raw.complete === false && (request.raw.readableAborted || request.raw.socket.destroyed)) {
      request.log.info({ method: request.method, url: request.url }, 'the client closed the connection before its request had arrived')
      return sendError(reply, 400, 'malformed_request', 'The request was not received whole')
    }
    if (error instanceof UnavailableError) {
      request.log.debug({ err: error }, 'request shed')
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return sendError(reply, 503, 'unavailable', error.message)
    }
    if (error instanceof HandlerTimeoutError) {
      request.log.warn({ err: error }, 'request timed out')
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return sendError(reply, 503, 'unavailable', 'The request took too long; try again later')
    }
    if (databaseBusy(error)) {
      request.log.warn({ err: error }, 'database busy')
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return sendError(reply, 503, 'unavailable', 'The database is busy; try again later')
    }
    if (databaseUnavailable(error)) {
      request.log.warn({ err: error }, 'database unavailable')
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return sendError(reply, 503, 'unavailable', 'The database is unavailable; try again later')
    }
    // A service that is off by configuration (no SMTP_URL): its own code, and no log of a fault.
    if (error instanceof CodedError && error.statusCode === 503) {
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return sendError(reply, 503, error.errorCode, error.message)
    }
    const referred = foreignKeyRefusal(error, request.method)
    if (referred !== undefined) {
      request.log.debug({ err: error }, 'a foreign key refused the change')
      return sendError(reply, 409, referred.code, referred.message)
    }
    const statusCode = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 600
      ? error.statusCode
      : 500
    if (statusCode >= 500) {
      request.log.error({ err: error }, 'unexpected error')
      return sendError(reply, statusCode, codeOf(error, statusCode), 'The server failed to answer this request')
    }
    // Refused before it spent anything (the token check's 401, a permission's 403), a request
    // spends its unit as any does, and past its caller's limit is told so.
    const limited = statusCode === 429 ? undefined : await fastify.rateLimits.spendRefused(request, reply)
    if (limited !== undefined) return sendError(reply, 429, 'rate_limited', limited)
    // The current tag, so that the client can read the record again and decide.
    if (error instanceof PreconditionFailedError) reply.header('etag', error.etag)
    // A route that does not exist is a scanner's probe as often as not: a line each at info
    // would let anyone fill the logs.
    // plugins/app/request-log.ts logs the request; its stack only with LOG_LEVEL=debug.
    request.log.debug({ err: error }, 'why the request was refused')
    return sendError(reply, statusCode, codeOf(error, statusCode), error.message, error instanceof InvalidFields || error instanceof InvalidRows ? error.fields : undefined)
  })
}, { name: 'errors' })
