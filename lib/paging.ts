import type { FastifyReply } from 'fastify'

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
