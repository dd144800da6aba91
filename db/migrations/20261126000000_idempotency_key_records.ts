import type { Knex } from 'knex'

/**
 * A create that is one INSERT keeps its key in that same statement (plugins/app/idempotency.ts),
 * before its answer is made: such a key keeps the row the INSERT returned, as PostgreSQL writes
 * a row as text, and a repeat is answered from it as the first request was. The other creates
 * keep their answer (`status`, `headers`, `body`), as before.
 *
 * A key's answer, where it has one, comes first: an instance of the previous version, during a
 * rolling deploy, may write one over an expired key's row and leave the row behind. That
 * instance cannot read a key that keeps only a row (docs/deployment.md).
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    alter table idempotency_keys
      add column record text,
      alter column headers drop not null,
      alter column body drop not null,
      add constraint idempotency_keys_an_answer check ((body is not null and headers is not null) or record is not null)`)
}

export async function down (knex: Knex): Promise<void> {
  await knex('idempotency_keys').whereNull('body').delete()
  await knex.raw(`
    alter table idempotency_keys
      drop constraint idempotency_keys_an_answer,
      drop column record,
      alter column headers set not null,
      alter column body set not null`)
}
