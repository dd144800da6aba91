import type { Knex } from 'knex'
import { emailKey } from '../../lib/auth/email.js'

/**
 * Users are found, kept unique and rate limited by one form of their address (lib/auth/email.ts),
 * worked out by the service rather than by PostgreSQL's locale-dependent `lower()`: the two
 * disagreed on "İ", so that a locked address logged in under another spelling.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.schema.alterTable('users', table => { table.text('email_key') })
  const users: { id: number, email: string }[] = await knex('users').select('id', 'email')
  for (const user of users) await knex('users').where({ id: user.id }).update({ email_key: emailKey(user.email) })
  // The previous version of the service, still serving during a rolling deploy, writes no
  // email_key: worked out here for its writes, with PostgreSQL's lower() as that version matched,
  // so that its inserts and e-mail changes keep working and stay findable.
  await knex.raw(`
    create function users_email_key() returns trigger language plpgsql as $$
    begin
      if new.email_key is null or (tg_op = 'UPDATE' and new.email is distinct from old.email
          and new.email_key is not distinct from old.email_key) then
        new.email_key := lower(normalize(new.email, NFKC));
      end if;
      return new;
    end $$`)
  await knex.raw('create trigger users_email_key before insert or update on users for each row execute function users_email_key()')
  await knex.raw('alter table users alter column email_key set not null')
  await knex.raw('drop index users_email_unique')
  await knex.raw('create unique index users_email_unique on users (email_key) where deleted_at is null')
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop function users_email_key() cascade')
  await knex.raw('drop index users_email_unique')
  await knex.raw('create unique index users_email_unique on users (lower(email)) where deleted_at is null')
  await knex.schema.alterTable('users', table => { table.dropColumn('email_key') })
}
