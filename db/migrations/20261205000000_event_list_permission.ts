import type { Knex } from 'knex'

/** The permission to read the change feed (GET /api/events), held by Admin. */
export async function up (knex: Knex): Promise<void> {
  await knex('permissions').insert({ name: 'event-list' })
  await knex.raw(`insert into role_permissions (role_id, permission_id)
    select r.id, p.id from roles r, permissions p where r.name = 'Admin' and p.name = 'event-list'`)
}

export async function down (knex: Knex): Promise<void> {
  await knex('permissions').where({ name: 'event-list' }).delete()
}
