/**
 * What requests cost, in units of the caller's rate limit and quota: the one table, which the
 * README's "Rate limits and quotas" and the OpenAPI document's `RateLimit-Policy` repeat.
 */

/** A page's rows a unit: a page above 100 rows costs a unit more for each 100. */
const PAGE_ROWS = 100
/** `count=exact` reads every row that matches. */
const EXACT_COUNT = 4

/** Rows a unit, beyond the request's own: a batch's (as sent), an import's (as read), an export's (as written). */
const ROWS_A_UNIT = { batch: 10, import: 100, export: 1_000 } as const

/** A request's cost, known from its query before its body is read: 1, more for a large page or an exact count. */
export function costOf (query: unknown): number {
  const { limit, count } = query as { limit?: unknown, count?: unknown }
  // A page size the lists take (1 to 1,000, in digits, leading zeros too, as the query's
  // validation reads them: `01000` is 1,000 rows); any other is refused, 400, and costs 1.
  const rows = typeof limit === 'string' && /^\d+$/.test(limit) && Number(limit) <= 1_000 ? Number(limit) : 0
  return Math.max(1, Math.ceil(rows / PAGE_ROWS)) + (count === 'exact' ? EXACT_COUNT : 0)
}

/** The units `rows` of a batch, an import or an export cost beyond the request's own: 1,000 rows of a batch 99. */
export function rowUnits (rows: number, kind: keyof typeof ROWS_A_UNIT): number {
  return Math.max(0, Math.ceil(rows / ROWS_A_UNIT[kind]) - 1)
}
