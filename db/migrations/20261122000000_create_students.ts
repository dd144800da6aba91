import type { Knex } from 'knex'

export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('students', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    table.string('name', 255).notNullable()
    table.string('email', 254).notNullable()
    table.smallint('age').notNullable()
    table.date('dob').notNullable()
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  })
  await knex.raw('alter table students add constraint students_age_range check (age between 0 and 150)')
  // E-mail addresses are unique without regard to case.
  await knex.raw('create unique index students_email_unique on students (lower(email))')
}

export async function down (knex: Knex): Promise<void> {
  await knex.schema.dropTable('students')
}
