import type { Knex } from 'knex'

/**
 * `start_session` with `p_without_factor`: a login that found no second factor of the user's
 * starts no session if one was confirmed while its password's hash was checked (the user
 * enrolling an app at that moment). The check comes after the user's lock, in a statement of
 * its own, whose snapshot sees what committed before the lock was granted; the rest is the
 * function of 20261203000000_session_cap_once.ts, which instances of the code before this
 * migration still call.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create function start_session (
      p_user_id integer, p_password text, p_max_age_seconds double precision, p_user_agent text, p_ip text,
      p_refresh_hash bytea, p_refresh_ttl_seconds double precision, p_keep integer, p_without_factor boolean)
    returns table (id bigint, user_id integer, expires_at timestamptz, superseded bigint[])
    language plpgsql volatile as $$
    begin
      perform 1 from users u where u.id = p_user_id and u.password = p_password and u.deleted_at is null for no key update;
      if not found then
        return;
      end if;
      if p_without_factor and exists (select 1 from totp_factors f where f.user_id = p_user_id and f.confirmed_at is not null) then
        return;
      end if;
      return query select * from start_session(p_user_id, p_password, p_max_age_seconds, p_user_agent, p_ip, p_refresh_hash, p_refresh_ttl_seconds, p_keep);
    end $$`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop function start_session (integer, text, double precision, text, text, bytea, double precision, integer, boolean)')
}
