import type { Knex } from 'knex'

/**
 * Sessions: a login (or register) starts one, refresh tokens extend it, a logout or its end by
 * the user ends it. Access tokens carry their session's id; ending a session notifies every
 * instance (`session:<id>` on `auth_changed`), whose caller caches forget its tokens.
 *
 * Refresh tokens are kept as SHA-256 digests only, one row each, spent ones too: a spent token
 * presented again after the grace window is a reuse, and ends its session.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.schema.createTable('sessions', table => {
    table.specificType('id', 'bigint generated always as identity').primary()
    table.integer('user_id').notNullable().references('users.id').onDelete('CASCADE')
    table.timestamp('created_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    table.timestamp('last_used_at', { useTz: true }).notNullable().defaultTo(knex.fn.now())
    // SESSION_MAX_AGE after its start: no refresh extends a session past it.
    table.timestamp('expires_at', { useTz: true }).notNullable()
    table.timestamp('ended_at', { useTz: true })
    // Why it ended: routes/api/(authenticated)/sessions/repository.ts's EndReason.
    table.string('end_reason', 32)
    table.string('user_agent', 512)
    table.string('ip', 64)
  })
  // A user's live sessions, newest first (the list, the cap on their number); and what the
  // sweep of the past looks for.
  await knex.raw('create index sessions_live_by_user on sessions (user_id, id) where ended_at is null')
  await knex.raw('create index sessions_ended on sessions (ended_at) where ended_at is not null')
  await knex.raw('create index sessions_expiry on sessions (expires_at)')

  await knex.schema.createTable('refresh_tokens', table => {
    table.binary('hash').primary()
    table.bigInteger('session_id').notNullable().references('sessions.id').onDelete('CASCADE').index()
    table.timestamp('issued_at', { useTz: true }).notNullable()
    table.timestamp('expires_at', { useTz: true }).notNullable().index()
    table.timestamp('spent_at', { useTz: true })
  })

  await knex.raw(`
    create function notify_session_ended() returns trigger language plpgsql as $$
    begin
      perform pg_notify('auth_changed', 'session:' || new.id);
      return null;
    end $$`)
  await knex.raw(`
    create trigger sessions_auth_changed after update of ended_at on sessions
      for each row when (old.ended_at is null and new.ended_at is not null)
      execute function notify_session_ended()`)
  // Emptied by hand (psql), every session is gone: every cache forgets everything.
  await knex.raw(`create trigger sessions_truncated after truncate on sessions
      for each statement execute function notify_auth_changed()`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.schema.dropTable('refresh_tokens')
  await knex.schema.dropTable('sessions')
  await knex.raw('drop function notify_session_ended()')
}
