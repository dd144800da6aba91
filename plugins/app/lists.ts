import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { ListPage } from '../../lib/db/keyset-table.js'
import { cursorSecret } from '../../lib/http/cursor.js'
import { listRequest, type ListFields, type ListQuery, type ListRequest } from '../../lib/http/list-query.js'
import { sendPage } from '../../lib/http/paging.js'

export interface Lists {
  /**
   * The list request of a request's validated query string (400 for a cursor of another list,
   * filters or sort); `defaultSort` is its order when the query names none (as its
   * `listQuerySchema` says). `scope` is the list whose cursors it takes: its route's by default.
   */
  request (request: FastifyRequest, fields: ListFields, defaultSort?: readonly string[], scope?: string): ListRequest
  /** Sends a page, with `Link` to the next and `X-Total-Count` as asked; `envelope` as /api answers. */
  send (reply: FastifyReply, list: ListRequest, page: ListPage, options: { path: string, envelope?: boolean }): FastifyReply
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
    request: (request, fields, defaultSort, scope = request.routeOptions.url!) => listRequest(scope, fields, request.query as ListQuery, secret, defaultSort),
    send: (reply, list, page, { path, envelope }) => sendPage(reply, list, page, { path, secret, envelope })
  } satisfies Lists)
}, { name: 'lists', dependencies: ['config'] })
