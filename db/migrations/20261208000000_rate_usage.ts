import type { Knex } from 'knex'

/**
 * What callers have spent of their rate limits and daily quotas (plugins/app/rate-limits.ts),
 * shared by every instance.
 *
 * - `rate_buckets`: a caller's bucket, `tokens` as of `taken_at`; it refills evenly between
 *   takes, up to the policy's count. Unlogged: a crash of PostgreSQL empties it, which gives
 *   every caller a full burst, and nothing more.
 * - `rate_quotas`: the units a caller has used on a UTC day. Logged: a quota survives a restart
 *   and a crash.
 * - `rate_take(…)`: one call, one round trip, takes from both under their row locks. It grants
 *   `wanted` units at most, and `cost` at least or nothing; gives back first what the caller's
 *   instance had taken and not used (`returned`), and charges `charge` units whatever is left
 *   (costs known only once a request has run; negative, units given back). The time is the service's (`moment`), so that the
 *   tests control the clock.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create unlogged table rate_buckets (
      key text primary key,
      tokens double precision not null,
      taken_at timestamptz not null
    );

    create table rate_quotas (
      key text not null,
      day date not null,
      used bigint not null,
      primary key (key, day)
    );

    create function rate_take(
      caller text, moment timestamptz, capacity double precision, per_second double precision, quota bigint,
      cost bigint, wanted bigint, returned bigint, charge bigint,
      out granted bigint, out tokens double precision, out used bigint
    ) language plpgsql as $$
    declare
      available double precision := 'infinity';
      quota_left double precision := 'infinity';
      today date := (moment at time zone 'UTC')::date;
    begin
      -- Each row made or locked by one upsert, which returns it: a sweep between an insert and
      -- a select could otherwise leave nothing to read. A clock behind the last take's
      -- (another instance's) adds nothing, rather than takes.
      if capacity is not null then
        insert into rate_buckets as b (key, tokens, taken_at) values (caller, capacity, moment)
          on conflict (key) do update set key = excluded.key
          returning least(capacity, b.tokens + returned + greatest(0, extract(epoch from moment - b.taken_at)) * per_second) into available;
      end if;
      if quota is not null then
        insert into rate_quotas as q (key, day, used) values (caller, today, 0)
          on conflict (key, day) do update set used = q.used
          returning greatest(0, q.used - returned) into used;
        quota_left := quota - used;
      end if;
      -- A millionth of a unit short is a unit: times in ms and rates in fractions round so.
      granted := floor(greatest(0, least(wanted, available, quota_left)) + 1e-6);
      if granted < cost then granted := 0; end if;
      tokens := available - granted - charge;
      if capacity is not null then
        update rate_buckets b set tokens = rate_take.tokens, taken_at = greatest(b.taken_at, moment) where b.key = caller;
      end if;
      if quota is not null then
        used := greatest(0, used + granted + charge);
        update rate_quotas q set used = rate_take.used where q.key = caller and q.day = today;
      end if;
    end $$;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    drop function rate_take(text, timestamptz, double precision, double precision, bigint, bigint, bigint, bigint, bigint);
    drop table rate_quotas;
    drop table rate_buckets;
  `)
}
