import type { Knex } from 'knex'

/** The permissions of enrollments, one per action, held by the Admin role. */
const PERMISSIONS = ['enrollment-list', 'enrollment-create', 'enrollment-edit', 'enrollment-delete']

export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('enrollments', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    // A student or a course with enrollments is not deleted: the delete answers 409 `referenced`.
    table.integer('student_id').notNullable().references('id').inTable('students').onDelete('RESTRICT')
    table.integer('course_id').notNullable().references('id').inTable('courses').onDelete('RESTRICT')
    table.string('status', 20).notNullable().defaultTo('enrolled')
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.unique(['student_id', 'course_id'], { indexName: 'enrollments_student_course_unique' })
    // PostgreSQL indexes no referencing column: these serve the lists of a student's or a
    // course's enrollments, and the check a delete of either makes.
    table.index(['student_id', 'id'])
    table.index(['course_id', 'id'])
  })
  await knex.raw("alter table enrollments add constraint enrollments_status check (status in ('enrolled', 'completed', 'withdrawn'))")
  await knex('permissions').insert(PERMISSIONS.map(name => ({ name })))
  await knex.raw(`insert into role_permissions (role_id, permission_id)
    select r.id, p.id from roles r, permissions p where r.name = 'Admin' and p.name = any(?)`, [PERMISSIONS])
}

export async function down (knex: Knex): Promise<void> {
  await knex('permissions').whereIn('name', PERMISSIONS).delete()
  await knex.schema.dropTable('enrollments')
}
