import type { Knex } from 'knex'

/**
 * The change outbox: one row per change of a record that clients may follow (students,
 * clients, roles, users), written in the change's own transaction by the write path
 * (plugins/app/write-path.ts). Sessions, API keys and logins are the audit log's only.
 *
 * `txid` is the writing transaction's id: a reader that shows only rows of transactions
 * older than every one still in flight never skips a row whose id was drawn before another's
 * but committed after it, which ids alone cannot tell.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('change_outbox', table => {
    table.specificType('id', 'bigint generated always as identity')
    table.specificType('txid', 'xid8').notNullable().defaultTo(knex.raw('pg_current_xact_id()'))
    table.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.string('resource', 32).notNullable()
    table.bigInteger('resource_id').notNullable()
    table.string('action', 32).notNullable()
    // The record after the change; before it, for a delete. Never a secret.
    table.jsonb('data').notNullable()
    // The fields an update changed; null for a create or a delete.
    table.specificType('changed', 'text[]')
    table.string('request_id', 128)
    table.bigInteger('actor_id')
    table.bigInteger('key_id')
  })
  // Readers take rows by transaction, then id: the one B-tree, as every index costs each write
  // (docs/performance.md). The retention sweep goes by time, on a BRIN index: next to nothing.
  await knex.raw('alter table change_outbox add primary key (txid, id)')
  await knex.raw('create index change_outbox_at on change_outbox using brin (at)')
}

export async function down (knex: Knex): Promise<void> {
  await knex.schema.dropTable('change_outbox')
}
