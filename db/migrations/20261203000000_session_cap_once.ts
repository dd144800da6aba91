import type { Knex } from 'knex'
import { up as startSessionUp } from './20261202000000_start_session.js'

/**
 * `start_session` finds the user's sessions past the cap once a login, not once per live
 * session. Written `s.id in (select … offset p_keep)`, the planner may run the subquery for
 * each live session it scans (a nested-loop semi join, on estimates of one row): at the cap,
 * 10,303 session rows fetched a login, about 2 ms of PostgreSQL's CPU (docs/performance.md,
 * "Login at the cap"). `= any(array(…))` is an InitPlan, run once; and the UPDATE names the
 * user, or its scan of the live sessions' index is bounded by no user at all. The lock, the
 * statements' own snapshots and the cap are as 20261202000000_start_session.ts explains them;
 * the function is written whole, as a migration keeps the SQL it applied.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create or replace function start_session (
      p_user_id integer, p_password text, p_max_age_seconds double precision, p_user_agent text, p_ip text,
      p_refresh_hash bytea, p_refresh_ttl_seconds double precision, p_keep integer)
    returns table (id bigint, user_id integer, expires_at timestamptz, superseded bigint[])
    language plpgsql volatile as $$
    declare
      v_id bigint;
      v_expires_at timestamptz;
      v_superseded bigint[];
    begin
      perform 1 from users u where u.id = p_user_id and u.password = p_password and u.deleted_at is null for no key update;
      if not found then
        return;
      end if;
      insert into sessions as s (user_id, expires_at, user_agent, ip)
        values (p_user_id, now() + make_interval(secs => p_max_age_seconds), p_user_agent, p_ip)
        returning s.id, s.expires_at into v_id, v_expires_at;
      insert into refresh_tokens (hash, session_id, issued_at, expires_at)
        values (p_refresh_hash, v_id, now(), least(now() + make_interval(secs => p_refresh_ttl_seconds), v_expires_at));
      -- The user's live sessions but the p_keep newest others end; one ended meanwhile by a
      -- logout or a password change is left to that.
      with ended as (
        update sessions s set ended_at = now(), end_reason = 'superseded'
        where s.user_id = p_user_id and s.id = any(array(select o.id from sessions o
            where o.user_id = p_user_id and o.id <> v_id and o.ended_at is null and o.expires_at > now()
            order by o.id desc offset p_keep))
          and s.ended_at is null
        returning s.id)
      select coalesce(array_agg(ended.id order by ended.id), '{}') into v_superseded from ended;
      return query select v_id, p_user_id, v_expires_at, v_superseded;
    end $$`)
}

/** Back to the function as the migration before wrote it. */
export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop function start_session (integer, text, double precision, text, text, bytea, double precision, integer)')
  await startSessionUp(knex)
}
