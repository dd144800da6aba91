import type { Knex } from 'knex'

/**
 * Change positions: the ids of audit entries and change outbox rows are drawn by
 * `change_position()` from one sequence, late in their transaction, so that a reader can
 * list them in an order that skips nothing (lib/db/settled-position.ts).
 *
 * An id drawn at insert is not enough by itself: a transaction that drew 7 may commit after
 * one that drew 8, and a reader that showed 8 and then asks for "after 8" never sees 7. So
 * `change_position()` first gives its transaction an id (`pg_current_xact_id()`), then draws.
 * A reader reads the sequence's last value, then the transactions holding an id: every one
 * that drew up to that value is among them, or has ended. Once those have ended, every
 * position up to the value is final, and the reader shows those only.
 *
 * And a row's position is drawn after the change it tells of, under the record's row lock:
 * of two transactions changing one record, the one that committed second drew second. So
 * each record's rows come in the order its changes did, which a transaction's id (drawn at
 * its first write, perhaps of another record) does not promise: the column `txid` is gone.
 */
export async function up (knex: Knex): Promise<void> {
  // CACHE 1 (the default, said here): a value cached per connection would be drawn out of order.
  await knex.raw('create sequence change_positions as bigint cache 1')
  await knex.raw(`
    create function change_position() returns bigint language plpgsql volatile as $$
    begin
      perform pg_current_xact_id();
      return nextval('change_positions');
    end $$`)
  // Past every id either table gave, so that the rows already written come first.
  await knex.raw(`select setval('change_positions', greatest(1,
    (select coalesce(max(id), 0) from audit_log), (select coalesce(max(id), 0) from change_outbox)))`)

  await knex.raw('alter table audit_log alter column id drop identity')
  await knex.raw('alter table audit_log alter column id set default change_position()')

  await knex.raw('alter table change_outbox drop constraint change_outbox_pkey')
  await knex.raw('alter table change_outbox drop column txid')
  await knex.raw('alter table change_outbox alter column id drop identity')
  await knex.raw('alter table change_outbox alter column id set default change_position()')
  await knex.raw('alter table change_outbox add primary key (id)')

  // The highest position a table's retention sweep deleted: a cursor below it may have missed rows.
  await knex.raw('create table swept_positions (source text primary key, through bigint not null)')
  await knex.raw('insert into swept_positions values (\'change_outbox\', 0)')
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop table swept_positions')
  await knex.raw('alter table change_outbox drop constraint change_outbox_pkey')
  await knex.raw('alter table change_outbox alter column id drop default')
  await knex.raw('alter table change_outbox alter column id add generated always as identity')
  await knex.raw('select setval(pg_get_serial_sequence(\'change_outbox\', \'id\'), greatest(1, (select coalesce(max(id), 0) from change_outbox)))')
  await knex.raw('alter table change_outbox add column txid xid8 not null default pg_current_xact_id()')
  await knex.raw('alter table change_outbox add primary key (txid, id)')
  await knex.raw('alter table audit_log alter column id drop default')
  await knex.raw('alter table audit_log alter column id add generated always as identity')
  await knex.raw('select setval(pg_get_serial_sequence(\'audit_log\', \'id\'), greatest(1, (select coalesce(max(id), 0) from audit_log)))')
  await knex.raw('drop function change_position()')
  await knex.raw('drop sequence change_positions')
}
