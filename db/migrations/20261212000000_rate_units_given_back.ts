import type { Knex } from 'knex'

/**
 * A caller's bucket and day (plugins/app/rate-limits.ts) across a change of policy and across
 * instances:
 *
 * - `rate_buckets.per_second`: the refill of the policy of the bucket's last take. The time
 *   since then refills at it, not at a policy set since: a raised rate starts from what the old
 *   one left and fills at its own pace from the first take under it (a caller idle for a while
 *   would otherwise find the time since refilled at the new rate, up to the new count at once).
 *   Null for a bucket of the previous version's takes: the policy's own then.
 * - `rate_buckets.capacity`: the count of the policy of the bucket's last take. Units an
 *   instance took ahead go back to the bucket only while it is still of the count they were
 *   taken under: a lowered policy caps the bucket at its new count, and units taken ahead under
 *   the old one, given back after, would lift it past that (they are the caller's loss, at most
 *   an eighth of the old count an instance; the bucket refills at its pace). Null for a bucket
 *   of the previous version's takes: it takes them back.
 * - `rate_quotas.leased_at`: the day's last take that granted units beyond its request's cost.
 *   An instance gives back what it has not spent within a few seconds, so a quota refused soon
 *   after may find units again: the refusal says when, not midnight.
 * - `rate_take(…, returned, returned_capacity, charge)`: as before, with the count the returned
 *   units were taken under, and `leased_ms` (ms since the epoch, null: none today).
 * - `rate_give_back(…)`: units an instance gives back without taking (the caller gone quiet, the
 *   instance closing): back to a bucket of the count they were taken under, as of its last take
 *   (its refill since is reckoned at the next), and to the day's quota.
 *
 * The previous `rate_take` stays, for the instances of the previous version during an update.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    alter table rate_buckets add column capacity double precision, add column per_second double precision;
    alter table rate_quotas add column leased_at timestamptz;

    create function rate_take(
      caller text, moment timestamptz, capacity double precision, per_second double precision, quota bigint,
      cost bigint, wanted bigint, returned bigint, returned_capacity double precision, charge bigint,
      out granted bigint, out tokens double precision, out used bigint, out leased_ms double precision
    ) language plpgsql as $$
    declare
      available double precision := 'infinity';
      quota_left double precision := 'infinity';
      today date := (moment at time zone 'UTC')::date;
      leased timestamptz;
    begin
      -- Each row made or locked by one upsert, which returns it: a sweep between an insert and
      -- a select could otherwise leave nothing to read. A clock behind the last take's
      -- (another instance's) adds nothing, rather than takes.
      if rate_take.capacity is not null then
        insert into rate_buckets as b (key, tokens, taken_at, capacity, per_second) values (caller, rate_take.capacity, moment, rate_take.capacity, rate_take.per_second)
          on conflict (key) do update set key = excluded.key
          returning least(rate_take.capacity,
            b.tokens + case when b.capacity is null or b.capacity = returned_capacity then returned else 0 end
              + greatest(0, extract(epoch from moment - b.taken_at)) * coalesce(b.per_second, rate_take.per_second)) into available;
      end if;
      if quota is not null then
        insert into rate_quotas as q (key, day, used) values (caller, today, 0)
          on conflict (key, day) do update set used = q.used
          returning greatest(0, q.used - returned), q.leased_at into used, leased;
        quota_left := quota - used;
      end if;
      -- A millionth of a unit short is a unit: times in ms and rates in fractions round so.
      granted := floor(greatest(0, least(wanted, available, quota_left)) + 1e-6);
      if granted < cost then granted := 0; end if;
      tokens := available - granted - charge;
      if rate_take.capacity is not null then
        update rate_buckets b set tokens = rate_take.tokens, taken_at = greatest(b.taken_at, moment), capacity = rate_take.capacity,
          per_second = rate_take.per_second where b.key = caller;
      end if;
      if quota is not null then
        used := greatest(0, used + granted + charge);
        if granted > cost then leased := greatest(leased, moment); end if;
        update rate_quotas q set used = rate_take.used, leased_at = leased where q.key = caller and q.day = today;
        leased_ms := extract(epoch from leased) * 1000;
      end if;
    end $$;

    create function rate_give_back(caller text, moment timestamptz, capacity double precision, quota bigint, units bigint)
    returns void language sql as $$
      update rate_buckets b set tokens = least(coalesce(b.capacity, rate_give_back.capacity), b.tokens + units)
        where b.key = caller and (b.capacity is null or b.capacity = rate_give_back.capacity);
      update rate_quotas q set used = greatest(0, q.used - units)
        where rate_give_back.quota is not null and q.key = caller and q.day = (moment at time zone 'UTC')::date;
    $$;
  `)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    drop function rate_give_back(text, timestamptz, double precision, bigint, bigint);
    drop function rate_take(text, timestamptz, double precision, double precision, bigint, bigint, bigint, bigint, double precision, bigint);
    alter table rate_quotas drop column leased_at;
    alter table rate_buckets drop column capacity, drop column per_second;
  `)
}
