import type { Knex } from 'knex'

/**
 * API keys: secrets a user makes for machine clients, each with permissions of its own (a
 * subset of its owner's when made; intersected with the owner's current ones at every check).
 * Kept as SHA-256 digests only, beside a prefix that names the key in a list. Revoking a key
 * or deleting it notifies every instance (`key:<id>` on `auth_changed`), whose caller caches
 * forget it; a change of its owner's roles or permissions already notifies `user:<id>`.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('api_keys', table => {
    table.specificType('id', 'bigint generated always as identity').primary()
    table.integer('user_id').notNullable().references('users.id').onDelete('CASCADE')
    table.string('name', 100).notNullable()
    // The secret's first characters, shown in lists so that a user can tell their keys apart.
    table.string('prefix', 16).notNullable()
    table.binary('hash').notNullable().unique()
    table.specificType('permissions', 'text[]').notNullable()
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.timestamp('expires_at', { useTz: true })
    table.timestamp('last_used_at', { useTz: true })
    table.timestamp('revoked_at', { useTz: true })
  })
  // A user's keys not revoked, newest first.
  await knex.raw('create index api_keys_live_by_user on api_keys (user_id, id) where revoked_at is null')

  await knex.raw(`
    create function notify_api_key_changed() returns trigger language plpgsql as $$
    begin
      perform pg_notify('auth_changed', 'key:' || coalesce(new.id, old.id));
      return null;
    end $$`)
  await knex.raw(`
    create trigger api_keys_revoked after update of revoked_at, permissions, expires_at on api_keys
      for each row execute function notify_api_key_changed()`)
  await knex.raw(`
    create trigger api_keys_deleted after delete on api_keys
      for each row execute function notify_api_key_changed()`)
  await knex.raw(`create trigger api_keys_truncated after truncate on api_keys
      for each statement execute function notify_auth_changed()`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.schema.dropTable('api_keys')
  await knex.raw('drop function notify_api_key_changed()')
}
