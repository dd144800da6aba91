import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ListPage } from '../../lib/db/keyset-table.js'
import { cursorSecret, listRequest, type ListFields, type ListQuery, type ListRequest } from '../../lib/http/list-query.js'
import { sendPage } from '../../lib/http/paging.js'

export interface Lists {
  /** The list request of a validated query string (400 for a cursor of other filters or sort). */
  request (fields: ListFields, query: ListQuery): ListRequest
  /** Sends a page, with `Link` to the next and `X-Total-Count` as asked; `envelope` as /api answers. */
  send (request: FastifyRequest, reply: FastifyReply, list: ListRequest, page: ListPage, options: { path: string, envelope?: boolean }): FastifyReply
}

declare module 'fastify' {
  interface FastifyInstance {
    /** What every list route does with its query string and its page (lib/http/list-query.ts). */
    lists: Lists
  }
}

/** Lists' filters, sorts, cursors and counts, the same for every resource. */
export default fp(async (fastify) => {
  const secret = cursorSecret(fastify.config.auth.jwtSecret)
  fastify.decorate('lists', {
    request: (fields, query) => listRequest(fields, query, secret),
    send: (request, reply, list, page, { path, envelope }) => sendPage(request, reply, list, page, { path, secret, envelope })
  } satisfies Lists)
}, { name: 'lists', dependencies: ['config'] })
