import type { FastifyReply } from 'fastify'
import type { Knex } from 'knex'

/** The count under one key, and the seconds left in its window. */
export interface AttemptCount { key: string, hits: number, retry_after: number }

/** An attempt to count (plugins/app/throttle.ts makes it), and the check of its counts. */
export interface Attempt {
  /** The seconds of a window, and the keys to count under: the client IP's, the e-mail address's if any. */
  windowSeconds: number
  ipKey: string
  emailCounter: string | null
  /** Answers 429, with Retry-After, when a count is past its key's limit. */
  check: (reply: FastifyReply, counts: AttemptCount[]) => void
}

/**
 * Counts one attempt under each key, the second unless null (an SQL expression may name it: a
 * refresh counts under the session of its token), and answers each count and the
 * seconds left in its window: an INSERT … RETURNING, for a prepared statement of its own or
 * for a WITH of one that does more (login looks the user up in the same round trip).
 */
export const countAttempt = (knex: Knex, windowSeconds: number, ipKey: string, emailCounter: string | Knex.Raw | null) => knex.raw(`
  insert into rate_limits as r (key, hits, reset_at)
  select key, 1, now() + make_interval(secs => ?) from unnest(array[?, ?]::text[]) as key where key is not null
  on conflict (key) do update set
    hits = case when r.reset_at <= now() then 1 else r.hits + 1 end,
    reset_at = case when r.reset_at <= now() then excluded.reset_at else r.reset_at end
  returning key, hits, ceil(extract(epoch from reset_at - now()))::int as retry_after`, [windowSeconds, ipKey, emailCounter])
