import type { Knex } from 'knex'

/**
 * A create that is one INSERT keeps its key in that same statement (plugins/app/idempotency.ts),
 * before its answer is made: such a key keeps the row the INSERT returned, as PostgreSQL writes
 * a row as text, and a repeat is answered from it as the first request was. The other creates
 * keep their answer (`status`, `headers`, `body`), as before. Each key keeps one or the other.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    alter table idempotency_keys
      add column record text,
      alter column headers drop not null,
      alter column body drop not null,
      add constraint idempotency_keys_one_answer check ((body is null) = (headers is null) and (body is null) <> (record is null))`)
}

export async function down (knex: Knex): Promise<void> {
  await knex('idempotency_keys').whereNotNull('record').delete()
  await knex.raw(`
    alter table idempotency_keys
      drop constraint idempotency_keys_one_answer,
      drop column record,
      alter column headers set not null,
      alter column body set not null`)
}
