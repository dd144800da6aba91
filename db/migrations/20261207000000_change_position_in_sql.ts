import type { Knex } from 'knex'

/**
 * `change_position()` in SQL rather than PL/pgSQL: PostgreSQL inlines a SQL function of one
 * expression into the statement that calls it (each audit entry's and outbox row's id), where
 * PL/pgSQL ran a statement of its own for `perform` on every row, some 7 µs of the database's
 * CPU a call (docs/performance.md). Its order stays the same: the CASE gives the transaction
 * its id first, then draws the position (db/migrations/20261204000000_change_positions.ts).
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function change_position() returns bigint language sql volatile as $$
      select case when pg_current_xact_id() is not null then nextval('change_positions') end
    $$`)
}

export async function down (knex: Knex): Promise<void> {
  // Replaced in place, the function keeps its oid, by which the columns' defaults name it.
  await knex.raw(`
    create or replace function change_position() returns bigint language plpgsql volatile as $$
    begin
      perform pg_current_xact_id();
      return nextval('change_positions');
    end $$`)
}
