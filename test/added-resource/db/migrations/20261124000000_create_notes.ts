import type { Knex } from 'knex'

/** The permissions of notes, one per action, held by the Admin role. */
const PERMISSIONS = ['note-list', 'note-create', 'note-edit', 'note-delete']

export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('notes', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    table.string('title', 200).notNullable()
    table.boolean('pinned').notNullable().defaultTo(false)
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  })
  await knex('permissions').insert(PERMISSIONS.map(name => ({ name })))
  await knex.raw(`insert into role_permissions (role_id, permission_id)
    select r.id, p.id from roles r, permissions p where r.name = 'Admin' and p.name = any(?)`, [PERMISSIONS])
}

export async function down (knex: Knex): Promise<void> {
  await knex('permissions').whereIn('name', PERMISSIONS).delete()
  await knex.schema.dropTable('notes')
}
