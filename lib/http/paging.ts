import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ListPage } from '../db/keyset-table.js'
import { makeCursor, type ListRequest } from './list-query.js'

/** The largest id a PostgreSQL `integer` holds; a larger one names no record. */
export const MAX_ID = 2_147_483_647

export const DEFAULT_PAGE = 100
export const MAX_PAGE = 1000

export interface Page {
  limit: number
  after?: number | undefined
}

/** The parameters a next page's link replaces. */
const POSITION = /^(after|cursor)(=|$)/

/**
 * Where the next page is: a plain list's `?limit=…&after=<id>`; otherwise the request's own
 * query string, as sent, with the position in place of its own: `after` in id order with no
 * filter, else a `cursor` (lib/http/list-query.ts).
 */
function nextLink (request: FastifyRequest, list: ListRequest, next: NonNullable<ListPage['next']>, path: string, secret: string): string {
  const byId = list.filters.length === 0 && list.sort.length === 0
  if (byId && list.count === undefined) return `${path}?limit=${list.limit}&after=${next.id}`
  const position = byId ? `after=${next.id}` : `cursor=${makeCursor(list, next.values, next.id, secret)}`
  const query = request.url.slice(request.url.indexOf('?') + 1).split('&').filter(part => part !== '' && !POSITION.test(part))
  return `${path}?${[...query, position].join('&')}`
}

export interface SendOptions {
  /** The list's path, as its links name it. */
  path: string
  /** Signs cursors (lib/http/list-query.ts). */
  secret: string
  /** As the authenticated interface answers: `{ success: true, data: [...] }`. */
  envelope?: boolean
}

/**
 * Sends one page of rows written as JSON (lib/db/json-row-writer.ts) as a JSON array, or as
 * the `data` of the authenticated interface's `{ success: true, data }`; with `Link: <…>;
 * rel="next"` when more follow and `X-Total-Count` when a count was asked for. Fastify sends
 * a string whose content type is JSON as it is, without serializing it again.
 */
export function sendPage (request: FastifyRequest, reply: FastifyReply, list: ListRequest, page: ListPage, options: SendOptions): FastifyReply {
  if (page.next) reply.header('link', `<${nextLink(request, list, page.next, options.path, options.secret)}>; rel="next"`)
  if (page.total !== undefined) reply.header('x-total-count', String(page.total))
  const array = `[${page.rows.map(row => row.json).join(',')}]`
  return reply.type('application/json; charset=utf-8').send(options.envelope ? `{"success":true,"data":${array}}` : array)
}
