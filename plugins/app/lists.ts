import type { FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import Negotiator from 'negotiator'
import type { ListPage } from '../../lib/db/keyset-table.js'
import { cursorSecret } from '../../lib/http/cursor.js'
import { listRequest, type ListFields, type ListQuery, type ListRequest } from '../../lib/http/list-query.js'
import { sendPage } from '../../lib/http/paging.js'
import { rowUnits } from '../../lib/limits/costs.js'
import type { ExportStream } from '../../lib/db/export-copy.js'

export interface Lists {
  /**
   * The list request of a request's validated query string (400 for a cursor of another list,
   * filters or sort); `defaultSort` is its order when the query names none (as its
   * `listQuerySchema` says). `scope` is the list whose cursors it takes: its route's by default.
   */
  request (request: FastifyRequest, fields: ListFields, defaultSort?: readonly string[], scope?: string): ListRequest
  /** Sends a page, with `Link` to the next and `X-Total-Count` as asked; `envelope` as /api answers. */
  send (reply: FastifyReply, list: ListRequest, page: ListPage, options: { path: string, envelope?: boolean }): FastifyReply
  /** The export a GET asks for by its `Accept` (`text/csv`, `application/x-ndjson`) over JSON; none for JSON, or a HEAD. */
  exportFormat (request: FastifyRequest): ExportFormat | undefined
  /**
   * Streams an export as it is read (`open`: a list's `export`, given EXPORT_TIMEOUT), as `name.csv` or `name.ndjson`,
   * in one of the instance's bulk slots (BULK_CONCURRENCY; none free, 503).
   */
  sendExport (request: FastifyRequest, reply: FastifyReply, open: (timeoutMs: number) => Promise<ExportStream>, format: ExportFormat, name: string): Promise<FastifyReply>
}

/** The forms a list exports in, besides its JSON pages. */
export type ExportFormat = 'csv' | 'ndjson'

/** Each form's media type; JSON's first, the answer to `*\/*` or no `Accept`. */
export const EXPORT_TYPES: Record<ExportFormat, string> = { csv: 'text/csv', ndjson: 'application/x-ndjson' }
const OFFERED = ['application/json', EXPORT_TYPES.csv, EXPORT_TYPES.ndjson]

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
    send: (reply, list, page, { path, envelope }) => sendPage(reply, list, page, { path, secret, envelope }),
    exportFormat (request) {
      if (request.method !== 'GET' || request.headers.accept === undefined) return undefined
      const chosen = new Negotiator({ headers: { accept: request.headers.accept } }).mediaType(OFFERED)
      return chosen === EXPORT_TYPES.csv ? 'csv' : chosen === EXPORT_TYPES.ndjson ? 'ndjson' : undefined
    },
    async sendExport (request, reply, open, format, name) {
      // One of the instance's bulk slots, until the COPY ends: the rows all sent, or the client gone.
      const release = request.holdBulkSlot()
      let rows: ExportStream
      try {
        rows = await open(fastify.config.exportTimeoutMs)
      } catch (error) {
        release()
        throw error
      }
      rows.once('close', release)
      // Read to its end, its rows cost the caller's rate limit (COPY counts them).
      void rows.rowsCopied.then(copied => request.chargeUnits(rowUnits(copied, 'export')))
      return reply
        .type(format === 'csv' ? 'text/csv; charset=utf-8; header=present' : 'application/x-ndjson; charset=utf-8')
        .header('content-disposition', `attachment; filename="${name}.${format}"`)
        .header('cache-control', 'no-store')
        // Proxies that buffer answers (nginx) pass this one on as it comes.
        .header('x-accel-buffering', 'no')
        .send(rows)
    }
  } satisfies Lists)
}, { name: 'lists', dependencies: ['config', 'bulk-slots', 'rate-limits'] })
