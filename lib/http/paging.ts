import type { FastifyReply } from 'fastify'
import type { JsonRow } from '../db/json-row-writer.js'

/** The largest id a PostgreSQL `integer` holds; a larger one names no record. */
export const MAX_ID = 2_147_483_647

export const DEFAULT_PAGE = 100
export const MAX_PAGE = 1000

export interface Page {
  limit: number
  after?: number | undefined
}

/**
 * The page a list's query asks for. `limit` is optional in the OpenAPI document (generated
 * clients need not send it), and validation fills in its default (PageQuery).
 */
export function pageOf (query: { limit?: number | undefined, after?: number | undefined }): Page {
  return { limit: query.limit!, after: query.after }
}

/**
 * Trims rows fetched with `limit + 1` to one page; when the extra row came, the `Link`
 * header points at the next page.
 */
export function page<T extends { id: number }> (rows: T[], limit: number, reply: FastifyReply, path: string): T[] {
  if (rows.length > limit) {
    rows.length = limit
    reply.header('link', `<${path}?limit=${limit}&after=${rows[limit - 1]!.id}>; rel="next"`)
  }
  return rows
}

/**
 * Sends one page of rows written as JSON (lib/db/json-row-writer.ts), fetched with `limit + 1`,
 * as a JSON array, or as the `data` of the authenticated interface's `{ success: true, data }`,
 * with the `Link` header as `page` sets it. Fastify sends a string whose content type is
 * JSON as it is, without serializing it again.
 */
export function sendJsonPage (rows: JsonRow[], limit: number, reply: FastifyReply, path: string, envelope = false): FastifyReply {
  const array = `[${page(rows, limit, reply, path).map(row => row.json).join(',')}]`
  return reply.type('application/json; charset=utf-8').send(envelope ? `{"success":true,"data":${array}}` : array)
}
