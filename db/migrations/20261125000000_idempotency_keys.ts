import type { Knex } from 'knex'

/**
 * The answers of creates sent with an `Idempotency-Key` (plugins/app/idempotency.ts): a key is
 * written in the transaction of the record it created, so neither commits without the other.
 * `scope` is whose key it is (a user, or an open route); `fingerprint` an HMAC of the request,
 * so that the same key with another request is told apart without keeping the request (a
 * register's password). Rows past `expires_at` count as absent and are swept.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('idempotency_keys', table => {
    table.text('scope').notNullable()
    table.text('key').notNullable()
    table.text('fingerprint').notNullable()
    table.smallint('status').notNullable()
    table.jsonb('headers').notNullable()
    table.text('body').notNullable()
    table.timestamp('expires_at', { useTz: true }).notNullable()
    table.primary(['scope', 'key'])
    table.index(['expires_at'])
  })
}

export async function down (knex: Knex): Promise<void> {
  await knex.schema.dropTable('idempotency_keys')
}
