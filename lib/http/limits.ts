/** The range of a PostgreSQL `integer`. */
export const INT_MIN = -2_147_483_648
export const INT_MAX = 2_147_483_647

/** The largest id a PostgreSQL `integer` holds; a larger one names no record. */
export const MAX_ID = INT_MAX

/**
 * The largest change position (an audit entry's or an event's id, a bigint) the service takes:
 * the largest integer a JSON number holds exactly.
 */
export const MAX_POSITION = Number.MAX_SAFE_INTEGER

/** A list's page: 100 records unless asked, 1000 at the most. */
export const DEFAULT_PAGE = 100
export const MAX_PAGE = 1000

/**
 * A batch's body limit: 1,000 of the largest records (a client's fields run to some 1.1 KB of
 * JSON) with room for escapes; a single create keeps the app's 32 KiB.
 */
export const BATCH_BODY_LIMIT = 4 * 1024 * 1024
