import type { Knex } from 'knex'

/**
 * E-mail verification (routes/api/(public)/email/): when a user's address was last proven
 * theirs (null: never, or not since it changed), the address a change waits to be verified for
 * before it replaces the user's (`pending_email`), and the token last sent to a user, by its
 * SHA-256, beside the address it proves. One row a user: a new mail replaces the token, so
 * that only the latest works; a verification deletes it, so that it works once.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    alter table users add column email_verified_at timestamptz, add column pending_email text;

    create table email_verifications (
      user_id integer primary key references users (id) on delete cascade,
      email text not null,
      token_hash bytea not null unique,
      expires_at timestamptz not null,
      created_at timestamptz not null default now()
    )`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    drop table email_verifications;
    alter table users drop column pending_email, drop column email_verified_at`)
}
