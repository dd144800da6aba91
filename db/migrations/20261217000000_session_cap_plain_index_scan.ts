import type { Knex } from 'knex'

const START_SESSION = 'start_session (integer, text, double precision, text, text, bytea, double precision, integer)'

/**
 * `start_session` finds the sessions past the cap with a plain index scan, never a bitmap one.
 * A session it ends leaves its entry in `sessions_live_by_user` until the table is vacuumed; a
 * plain index scan marks such an entry dead on its first visit and skips it after, a bitmap scan
 * never marks it, so each login of a user at the cap read again the heap rows of every session
 * it had ended since the last vacuum (the planner takes the bitmap scan for a user's few live
 * rows), and a login cost more the more logins had come since (docs/performance.md, "Login at
 * the cap").
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`alter function ${START_SESSION} set enable_bitmapscan = off`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`alter function ${START_SESSION} reset enable_bitmapscan`)
}
