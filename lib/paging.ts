import type { FastifyReply } from 'fastify'

/** The largest id a PostgreSQL `integer` holds; a larger one names no record. */
export const MAX_ID = 2_147_483_647

export interface Page {
  limit: number
  after?: number | undefined
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
