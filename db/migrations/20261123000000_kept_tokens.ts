import type { Knex } from 'knex'

/**
 * A password change ends every token of the user (their generation moves on), except the one
 * the user changed their own password with: it is kept here, valid in the new generation only,
 * so that ending all sessions again (logout ?scope=all) ends it too.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('kept_tokens', table => {
    table.uuid('jti').primary()
    table.integer('user_id').notNullable().references('users.id').onDelete('CASCADE')
    table.integer('token_generation').notNullable()
    // Past this instant the token has expired anyway, and the row can go.
    table.timestamp('expires_at', { useTz: true }).notNullable().index()
  })
}

export async function down (knex: Knex): Promise<void> {
  await knex.schema.dropTable('kept_tokens')
}
