import type { Knex } from 'knex'

/** The permissions of the first backend, one per action. */
const PERMISSIONS = ['client', 'role', 'user'].flatMap(resource =>
  ['list', 'create', 'edit', 'delete'].map(action => `${resource}-${action}`))

export async function up (knex: Knex): Promise<void> {
  const timestamps = (table: Knex.CreateTableBuilder) => {
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.timestamp('updated_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
  }

  await knex.schema.createTable('users', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    table.string('name', 255).notNullable()
    table.string('email', 254).notNullable()
    table.text('password').notNullable()
    // Tokens carry the generation they were issued in; logging out everywhere moves it on.
    table.integer('token_generation').notNullable().defaultTo(0)
    timestamps(table)
    table.timestamp('deleted_at', { useTz: true })
  })
  // Unique among the users not deleted: a deleted user's address is free again.
  await knex.raw('create unique index users_email_unique on users (lower(email)) where deleted_at is null')

  await knex.schema.createTable('permissions', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    table.string('name', 255).notNullable().unique()
    timestamps(table)
  })
  await knex.schema.createTable('roles', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    table.string('name', 255).notNullable()
    timestamps(table)
  })
  await knex.raw('create unique index roles_name_unique on roles (lower(name))')
  await knex.schema.createTable('role_permissions', table => {
    table.integer('role_id').notNullable().references('roles.id').onDelete('CASCADE')
    table.integer('permission_id').notNullable().references('permissions.id').onDelete('CASCADE')
    table.primary(['role_id', 'permission_id'])
  })
  await knex.schema.createTable('user_roles', table => {
    table.integer('user_id').notNullable().references('users.id').onDelete('CASCADE')
    table.integer('role_id').notNullable().references('roles.id').onDelete('CASCADE')
    table.primary(['user_id', 'role_id'])
    table.index('role_id')
  })

  await knex.schema.createTable('clients', table => {
    table.specificType('id', 'integer generated always as identity').primary()
    table.string('name', 255).notNullable()
    table.string('vat_number', 10).notNullable()
    table.string('street', 255).notNullable()
    table.string('city', 255).notNullable()
    table.string('post_code', 6).notNullable()
    table.string('email', 254).notNullable()
    timestamps(table)
    table.timestamp('deleted_at', { useTz: true })
  })

  await knex.schema.createTable('revoked_tokens', table => {
    table.uuid('jti').primary()
    // Past this instant the token has expired anyway, and the row can go.
    table.timestamp('expires_at', { useTz: true }).notNullable().index()
  })

  await knex.schema.createTable('rate_limits', table => {
    table.text('key').primary()
    table.integer('hits').notNullable()
    table.timestamp('reset_at', { useTz: true }).notNullable()
  })

  await knex('permissions').insert(PERMISSIONS.map(name => ({ name })))
  const [admin, user] = await knex('roles').insert([{ name: 'Admin' }, { name: 'User' }]).returning('id')
  const permissions = await knex('permissions').select('id', 'name')
  await knex('role_permissions').insert([
    ...permissions.map(p => ({ role_id: admin!.id, permission_id: p.id })),
    ...permissions.filter(p => p.name.startsWith('client-')).map(p => ({ role_id: user!.id, permission_id: p.id }))
  ])
}

export async function down (knex: Knex): Promise<void> {
  for (const table of ['rate_limits', 'revoked_tokens', 'clients', 'user_roles', 'role_permissions', 'roles', 'permissions', 'users']) {
    await knex.schema.dropTable(table)
  }
}
