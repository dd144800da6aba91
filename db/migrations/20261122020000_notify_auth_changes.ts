import type { Knex } from 'knex'

/**
 * Every change that can make a token's check answer differently sends a notification on the
 * `auth_changed` channel, at commit, to every instance: `token:<jti>` for a logout,
 * `user:<id>` for a user's roles, generation or deletion, `all` for what touches many users.
 * Triggers, so that changes made outside the service (psql, scripts) are heard of too.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create function notify_auth_changed() returns trigger language plpgsql as $$
    begin
      if tg_level = 'STATEMENT' then
        perform pg_notify('auth_changed', 'all');
      elsif tg_table_name = 'revoked_tokens' then
        perform pg_notify('auth_changed', 'token:' || new.jti);
      elsif tg_op = 'UPDATE' and tg_table_name = 'user_roles' then
        perform pg_notify('auth_changed', 'all');
      elsif tg_table_name = 'users' then
        perform pg_notify('auth_changed', 'user:' || old.id);
      else
        perform pg_notify('auth_changed', 'user:' || coalesce(new.user_id, old.user_id));
      end if;
      return null;
    end $$`)
  await knex.raw(`
    create trigger revoked_tokens_auth_changed after insert on revoked_tokens
      for each row execute function notify_auth_changed();
    create trigger users_auth_changed after update of token_generation, deleted_at or delete on users
      for each row execute function notify_auth_changed();
    create trigger user_roles_auth_changed after insert or update or delete on user_roles
      for each row execute function notify_auth_changed();
    create trigger role_permissions_auth_changed after insert or update or delete on role_permissions
      for each statement execute function notify_auth_changed();
    create trigger permissions_auth_changed after update or delete on permissions
      for each statement execute function notify_auth_changed();`)
  for (const table of ['revoked_tokens', 'users', 'user_roles', 'role_permissions', 'permissions']) {
    await knex.raw(`create trigger ${table}_truncated after truncate on ${table}
      for each statement execute function notify_auth_changed()`)
  }
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop function notify_auth_changed() cascade')
}
