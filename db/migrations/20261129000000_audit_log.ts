import type { Knex } from 'knex'

/**
 * The audit log: one entry per change to users, roles, clients, API keys and sessions, written
 * in the change's own transaction (plugins/app/audit.ts). Append-only: a trigger refuses every
 * UPDATE, and every DELETE but the retention sweep's, which names in its own transaction
 * (`audit.sweep_before`) the time before which entries may go. Nothing references users or the
 * other tables: an entry outlives what it tells of.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('audit_log', table => {
    table.specificType('id', 'bigint generated always as identity').primary()
    table.timestamp('at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    // Who: the user, and the API key or the session they acted through; none for a caller
    // without a token (a failed login, a refresh token spent again).
    table.bigInteger('actor_id')
    table.bigInteger('key_id')
    table.bigInteger('session_id')
    table.string('ip', 64)
    table.string('request_id', 64)
    table.string('action', 32).notNullable()
    table.string('resource', 32).notNullable()
    table.bigInteger('resource_id')
    // The fields that changed, as they were and as they became; no secret's value.
    table.jsonb('before')
    table.jsonb('after')
  })
  // The filters of GET /api/audit, each newest first. Entries come in time order: a BRIN index
  // serves the time filters and the sweep for next to nothing on every write.
  await knex.raw('create index audit_log_actor on audit_log (actor_id, id)')
  await knex.raw('create index audit_log_resource on audit_log (resource, resource_id, id)')
  await knex.raw('create index audit_log_at on audit_log using brin (at)')

  await knex.raw(`
    create function audit_log_append_only() returns trigger language plpgsql as $$
    begin
      if tg_op = 'DELETE' and old.at < coalesce(nullif(current_setting('audit.sweep_before', true), '')::timestamptz, '-infinity') then
        return old;
      end if;
      raise exception 'The audit log is append-only' using errcode = 'insufficient_privilege';
    end $$`)
  await knex.raw(`create trigger audit_log_append_only before update or delete on audit_log
      for each row execute function audit_log_append_only()`)
  await knex.raw(`create trigger audit_log_no_truncate before truncate on audit_log
      for each statement execute function audit_log_append_only()`)

  // The permission to read it, held by Admin.
  await knex('permissions').insert({ name: 'audit-list' })
  await knex.raw(`insert into role_permissions (role_id, permission_id)
    select r.id, p.id from roles r, permissions p where r.name = 'Admin' and p.name = 'audit-list'`)
}

export async function down (knex: Knex): Promise<void> {
  await knex('permissions').where({ name: 'audit-list' }).delete()
  await knex.schema.dropTable('audit_log')
  await knex.raw('drop function audit_log_append_only()')
}
