import type { Knex } from 'knex'

/**
 * Attempt counters need no crash safety: unlogged, a count writes no WAL and its commit waits
 * for no flush, which had held the row's lock through every login's fsync (PostgreSQL's CPU a
 * login 695 → 500 µs). After a crash (not a clean shutdown) the counters start again at
 * zero, and standbys do not have them.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw('alter table rate_limits set unlogged')
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('alter table rate_limits set logged')
}
