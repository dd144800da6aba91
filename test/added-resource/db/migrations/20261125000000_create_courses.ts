import type { Knex } from 'knex'

/** The permissions of courses, one per action, held by the Admin role. */
const PERMISSIONS = ['course-list', 'course-create', 'course-edit', 'course-delete']

export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('courses', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    table.string('code', 20).notNullable().unique({ indexName: 'courses_code_unique' })
    table.string('title', 200).notNullable()
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.index(['title', 'id'])
  })
  await knex('permissions').insert(PERMISSIONS.map(name => ({ name })))
  await knex.raw(`insert into role_permissions (role_id, permission_id)
    select r.id, p.id from roles r, permissions p where r.name = 'Admin' and p.name = any(?)`, [PERMISSIONS])
}

export async function down (knex: Knex): Promise<void> {
  await knex('permissions').whereIn('name', PERMISSIONS).delete()
  await knex.schema.dropTable('courses')
}
