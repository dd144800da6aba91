import type { KeyObject } from 'node:crypto'
import type { FastifyReply } from 'fastify'
import type { ListPage } from '../db/keyset-table.js'
import { makeCursor } from './cursor.js'
import { contentTag } from './entity-tags.js'
import type { ListRequest } from './list-query.js'

/**
 * Where the next page is: in id order with no filter `?limit=…&after=<id>`; otherwise the
 * list's filters, `sort` and `limit` as the request was understood, and a `cursor`
 * (lib/http/cursor.ts). Nothing else of the request comes along: cache-busting parameters, and
 * `count` (the count does not change from page to page; counting again is the caller's to ask).
 */
function nextLink (list: ListRequest, next: NonNullable<ListPage['next']>, path: string, secret: KeyObject): string {
  if (list.filters.length === 0 && list.sort.length === 0) return `${path}?limit=${list.limit}&after=${next.id}`
  const query = list.filters.map(({ field, operator, value }) =>
    `${field}[${operator}]=${encodeURIComponent(Array.isArray(value) ? value.join(',') : String(value))}`)
  if (list.sort.length > 0) query.push(`sort=${list.sort.map(({ field, descending }) => (descending ? '-' : '') + field).join(',')}`)
  query.push(`limit=${list.limit}`, `cursor=${makeCursor(list, next.values, next.id, secret)}`)
  return `${path}?${query.join('&')}`
}

export interface SendOptions {
  /** The list's path, as its links name it. */
  path: string
  /** Signs cursors (lib/http/cursor.ts). */
  secret: KeyObject
  /** As the authenticated interface answers: `{ success: true, data: [...] }`. */
  envelope?: boolean | undefined
}

/**
 * Sends one page of rows written as JSON (lib/db/json-row-writer.ts) as a JSON array, or as
 * the `data` of the authenticated interface's `{ success: true, data }`; with `Link: <…>;
 * rel="next"` when more follow, `X-Total-Count` when a count was asked for, and a weak `ETag`
 * of the page (304 for an `If-None-Match` that holds it). Fastify sends a string whose
 * content type is JSON as it is, without serializing it again.
 */
export function sendPage (reply: FastifyReply, list: ListRequest, page: ListPage, options: SendOptions): FastifyReply {
  if (page.next) reply.header('link', `<${nextLink(list, page.next, options.path, options.secret)}>; rel="next"`)
  if (page.total !== undefined) reply.header('x-total-count', String(page.total))
  const array = `[${page.rows.map(row => row.json).join(',')}]`
  const body = options.envelope ? `{"success":true,"data":${array}}` : array
  return reply.type('application/json; charset=utf-8').sendTagged(contentTag(body, true), body)
}
