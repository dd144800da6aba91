import type { Knex } from 'knex'

/**
 * Password resets by mail (routes/api/(public)/password/): the token last sent to a user, by
 * its SHA-256 (the token itself is only in the mail), valid until `expires_at`. One row a user:
 * a new request replaces the token, so that only the latest works; a reset deletes it, so that
 * it works once.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create table password_resets (
      user_id integer primary key references users (id) on delete cascade,
      token_hash bytea not null unique,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    )`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop table password_resets')
}
