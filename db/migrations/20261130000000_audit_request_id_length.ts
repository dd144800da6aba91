import type { Knex } from 'knex'

/**
 * A request's id is the caller's X-Request-Id when it is 1 to 128 safe characters
 * (lib/http/request-id.ts): the audit log keeps it whole. Widening a varchar rewrites nothing.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw('alter table audit_log alter column request_id type varchar(128)')
}

export async function down (knex: Knex): Promise<void> {
  // The audit log is append-only: ids longer than 64 are cut, as the service cut them before.
  await knex.raw('alter table audit_log alter column request_id type varchar(64) using left(request_id, 64)')
}
