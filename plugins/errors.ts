import { STATUS_CODES } from 'node:http'
import fp from 'fastify-plugin'
import type { FastifyError, FastifyReply, FastifySchemaValidationError } from 'fastify'
import type { SchemaErrorDataVar } from 'fastify/types/schema.js'
import { InvalidFields } from '../lib/invalid-fields.js'
import { HandlerTimeoutError } from './request-timing.js'

/** Seconds a client should wait before retrying a 503 (database out of reach, timeout, overload). */
export const RETRY_AFTER_SECONDS = 5

// Error codes of node's sockets (ENOENT: a Unix socket that is gone with its server) and of
// PostgreSQL (class 08: connection exception, 53300: too many connections, 57P0x: server
// shutting down or not yet up).
const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ENOENT',
  '08000', '08001', '08003', '08004', '08006', '53300', '57P01', '57P02', '57P03'
])

function isDatabaseUnavailable (error: FastifyError): boolean {
  return error.name === 'KnexTimeoutError' ||
    UNAVAILABLE_CODES.has(error.code) ||
    // pg's own errors for a connection lost (which knex prefixes with the SQL), and pg's pool's
    // for no free connection in time.
    /Connection terminated|Connection ended unexpectedly|connection error and is not queryable|timeout exceeded when trying to connect/.test(error.message)
}

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
    const field = path.length > 0 ? path.join('.') : context
    fields.set(field, [...fields.get(field) ?? [], message])
  }
  return Object.fromEntries(fields)
}

const PARTS: Record<SchemaErrorDataVar, string> = {
  body: 'request body', querystring: 'query string', params: 'path', headers: 'headers'
}

export function sendError (reply: FastifyReply, statusCode: number, message: string, data?: Record<string, string[]>) {
  return reply.code(statusCode).send({
    success: false,
    statusCode,
    error: STATUS_CODES[statusCode],
    message,
    ...(data && { data })
  })
}

/**
 * One error body for every error of every route. 4xx errors say what was wrong; 5xx
 * errors say nothing of the internals (no SQL, stack or names), and are logged whole.
 */
export default fp(async (fastify) => {
  fastify.setErrorHandler((error: FastifyError, request, reply) => {
    if (error.validation) {
      const context = error.validationContext as SchemaErrorDataVar
      const data = fieldErrors(error.validation, context)
      const summary = Object.entries(data).map(([field, problems]) => `${field} ${problems.join(', ')}`).join('; ')
      request.log.info({ validation: data }, 'invalid request')
      return sendError(reply, 400, `Invalid ${PARTS[context]}: ${summary}`, data)
    }
    if (error instanceof HandlerTimeoutError) {
      request.log.error({ err: error }, 'request timed out')
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return sendError(reply, 503, 'The request took too long; try again later')
    }
    if (isDatabaseUnavailable(error)) {
      request.log.error({ err: error }, 'database unavailable')
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return sendError(reply, 503, 'The database is unavailable; try again later')
    }
    const statusCode = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 600
      ? error.statusCode
      : 500
    if (statusCode >= 500) {
      request.log.error({ err: error }, 'request failed')
      return sendError(reply, statusCode, 'The server failed to answer this request')
    }
    request.log.info({ err: error }, 'request refused')
    return sendError(reply, statusCode, error.message, error instanceof InvalidFields ? error.fields : undefined)
  })
}, { name: 'errors' })
