import type { Knex } from 'knex'

/**
 * A session's last reauthentication (POST /api/profile/reauthenticate): the password, the
 * authenticator app's code or a passkey proven again in it. For 5 minutes after, what asks for
 * the password again (a new API key, e-mail address or password, a factor changed) takes the
 * session's word for it. Null until then: a login alone is not such a proof. And the wrong
 * codes and passkeys tried in it since: the fifth ends the session, so that a stolen access
 * token cannot guess its way to a proof.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`alter table sessions
    add column reauthenticated_at timestamptz,
    add column reauthentication_failures smallint not null default 0`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('alter table sessions drop column reauthenticated_at, drop column reauthentication_failures')
}
