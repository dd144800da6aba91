import type { Knex } from 'knex'

/**
 * A session's start as one function, so that a login writes its session, its first refresh
 * token, the end of the user's sessions past the cap and its audit entries in one statement
 * (routes/api/(authenticated)/sessions/repository.ts): as a transaction of five round trips, it cost the
 * main thread about a millisecond of CPU a login more (docs/performance.md, "Login, one
 * statement").
 *
 * It is a function, not a statement of CTEs, for the cap: it locks the user first, and each of
 * its statements after that sees the sessions committed meanwhile (under READ COMMITTED, the
 * service's isolation, a VOLATILE function's statements take snapshots of their own), so
 * logins of one user at once take their turns and each sees the sessions the ones before it
 * started. The CTEs of one statement share the snapshot taken before the lock was granted.
 *
 * No session starts for a user deleted, or whose password changed, since the login checked the
 * password (`p_password`, the hash it matched): the function then returns no row. A password
 * change ends every session, and one started by a login in flight must not outlive it. The lock is held until the calling statement's
 * transaction ends, in the order every change of a user takes its locks: the user, then their
 * sessions.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create function start_session (
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
        where s.id in (select o.id from sessions o
            where o.user_id = p_user_id and o.id <> v_id and o.ended_at is null and o.expires_at > now()
            order by o.id desc offset p_keep)
          and s.ended_at is null
        returning s.id)
      select coalesce(array_agg(ended.id order by ended.id), '{}') into v_superseded from ended;
      return query select v_id, p_user_id, v_expires_at, v_superseded;
    end $$`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop function start_session (integer, text, double precision, text, text, bytea, double precision, integer)')
}
