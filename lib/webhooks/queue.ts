import type pg from 'pg'
import { eventType } from '../db/event-type.js'
import { isoText } from '../db/pg-types.js'
import type { AttemptOutcome } from './send.js'

/** A delivery claimed for an attempt: where it goes, what it carries, how it is signed. */
export interface ClaimedDelivery {
  id: number
  webhook_id: number
  url: string
  /** The current secret, and the one it replaced while both sign. */
  secrets: string[]
  /** Its attempts so far, this one counted. */
  attempts: number
  /** Whether its webhook still takes its event's type: one changed since is not sent what it no longer takes. */
  taken: boolean
  /** The event, as GET /api/events shows it; none if it was swept (EVENTS_RETENTION) first. */
  event: { id: number } & Record<string, unknown> | null
}

/** How many positions the fan-out spans at a time (audit entries draw some too: at most that many events). */
const FAN_OUT_SPAN = 5_000

// One instance at a time holds the reader's row (SKIP LOCKED: another, finding it held, goes
// on): the events after its position, up to the settled one (`$1`) or FAN_OUT_SPAN positions
// on, become a delivery for each enabled webhook that takes their type and was made before
// them, and the position moves past them, in one statement. It starts past the positions
// drawn before every enabled webhook was made: the first webhook of a database whose feed
// has run long without one is not a long walk.
const FAN_OUT = `with reader as (select position from feed_readers where name = 'webhooks' for update skip locked),
  bound as (select start.after, least($1, start.after + ${FAN_OUT_SPAN}) as through from (select greatest(reader.position,
    coalesce((select min(after_position) from webhooks where enabled), reader.position)) as after from reader) start),
  fanned as (insert into webhook_deliveries (webhook_id, event_id)
    select w.id, o.id from bound, change_outbox o
      join webhooks w on w.enabled and o.id > w.after_position and ${eventType('o')} = any (w.types)
      where o.id > bound.after and o.id <= bound.through
    on conflict do nothing returning 1),
  moved as (update feed_readers set position = bound.through from bound, reader
    where name = 'webhooks' and bound.through > reader.position returning feed_readers.position)
  select (select count(*) from fanned)::int as fanned, coalesce((select position from moved), (select position from reader))::float8 as position,
    exists (select 1 from reader) as held`

// The due deliveries of enabled webhooks, at most `$3` of each (so that an endpoint that
// hangs does not take every attempt's place) and none of those in `$4` (which have as many in
// flight here already), the longest due first and then in event order, each claimed for `$2`
// seconds (its lease: a delivery whose instance dies is due again then), with what its
// attempt needs, and whether the webhook still takes its event's type.
const CLAIM = `with claimed as (update webhook_deliveries d set attempts = d.attempts + 1,
      claimed_until = now() + make_interval(secs => $2), next_attempt_at = now() + make_interval(secs => $2)
    from (select due.id from webhooks w cross join lateral (select d.id, d.next_attempt_at, d.event_id from webhook_deliveries d
        where d.webhook_id = w.id and d.state = 'pending' and d.next_attempt_at <= now()
        order by d.next_attempt_at, d.event_id limit $3 for update skip locked) due
      where w.enabled and w.id <> all($4::int[])
      order by due.next_attempt_at, due.event_id limit $1) due
    where d.id = due.id
    returning d.id, d.webhook_id, d.event_id, d.attempts)
  select c.id::float8 as id, c.webhook_id, c.attempts, w.url,
    array_remove(array[w.secret, case when w.previous_secret_until > now() then w.previous_secret end], null) as secrets,
    o.id is null or ${eventType('o')} = any (w.types) as taken,
    case when o.id is null then null else json_build_object('id', o.id::float8, 'type', ${eventType('o')}, 'resource', o.resource,
      'resource_id', o.resource_id::float8, 'occurred_at', ${isoText('o.at')}, 'request_id', o.request_id, 'data', o.data, 'changed', o.changed) end as event
  from claimed c join webhooks w on w.id = c.webhook_id left join change_outbox o on o.id = c.event_id
  order by c.event_id`

// The attempt's outcome: delivered; failed, for good once its next attempt would come past
// the retry window (`$6`) or it is `$8` (final); else pending until then (`$7` from now); and
// the attempt logged. A delivery no longer this attempt's (its webhook deleted, or claimed
// again after its lease ended) is left as it is. Of the delivery only: the endpoint's state is
// written apart (ENDPOINT_*), as a delete locks the webhook before its deliveries.
const FINISH = `with attempt as (update webhook_deliveries set
      state = case when $2 then 'delivered'
        when $8 or created_at + make_interval(secs => $6) < now() + make_interval(secs => $7) then 'failed' else 'pending' end,
      -- A webhook disabled meanwhile: its pending deliveries wait, as the others of it do.
      next_attempt_at = case when (select enabled from webhooks w where w.id = webhook_id) then now() + make_interval(secs => $7) else 'infinity' end,
      claimed_until = null
    where id = $1 and state = 'pending' and attempts = $9 returning id),
  logged as (insert into webhook_attempts (delivery_id, status, error, duration_ms, response)
    select id, $3, $4, $5, $10 from attempt)
  select count(*)::int as finished from attempt`

// A delivery succeeded: the endpoint is not failing.
const ENDPOINT_DELIVERED = 'update webhooks set failing_since = null, last_failure_at = null where id = $1 and failing_since is not null'

// A delivery failed: the endpoint has been failing since its first failure with no success
// since (a day without attempts ends a failing time: the endpoint was not tried, not failing);
// past `$2` seconds of it, it is disabled (the row locked first: a change by hand meanwhile is
// seen), with an audit entry when the log is on (`$3`), and
// its pending deliveries wait at `infinity`, out of the claims' way.
const ENDPOINT_FAILED = `with before as (select id, enabled,
      case when failing_since is null or last_failure_at < now() - interval '1 day' then now() else failing_since end as since
    from webhooks where id = $1 for no key update),
  failed as (update webhooks w set failing_since = before.since, last_failure_at = now(),
      enabled = w.enabled and before.since >= now() - make_interval(secs => $2),
      disabled_reason = case when w.enabled and before.since < now() - make_interval(secs => $2)
        then 'no delivery succeeded since ' || ${isoText('before.since')} else w.disabled_reason end,
      updated_at = case when w.enabled and before.since < now() - make_interval(secs => $2) then now() else w.updated_at end
    from before where w.id = before.id
    returning w.id, w.enabled, before.enabled as was_enabled, w.disabled_reason, w.failing_since),
  audited as (insert into audit_log (action, resource, resource_id, after)
    select 'disable', 'webhook', id, jsonb_build_object('enabled', enabled, 'disabled_reason', disabled_reason, 'failing_since', failing_since)
    from failed where was_enabled and not enabled and $3),
  paused as (update webhook_deliveries set next_attempt_at = 'infinity'
    where webhook_id = $1 and state = 'pending' and claimed_until is null and exists (select 1 from failed where was_enabled and not enabled))
  select coalesce((select was_enabled and not enabled from failed), false) as disabled`

// A delivery whose attempt a shutdown cut short: due at once again, for any instance, the
// attempt not counted; unless it is no longer this attempt's.
const RELEASE = `update webhook_deliveries set next_attempt_at = now(), claimed_until = null, attempts = attempts - 1
  where id = $1 and attempts = $2 and state = 'pending'`

const SWEEP_BATCH = 10_000
// By ctid, as the outbox's sweep: no index serves their time.
const SWEEP = `delete from webhook_deliveries where ctid = any(array(
    select ctid from webhook_deliveries where created_at < now() - make_interval(secs => $1) limit ${SWEEP_BATCH}))`

const ENABLED = 'select exists (select 1 from webhooks where enabled) as enabled'

/** The webhooks' deliveries in the database: fan-out, claim, outcome. */
export function deliveryQueue (pool: pg.Pool) {
  return {
    /**
     * Gives the events up to `through` their deliveries, unless another instance does so now
     * (`held` false): where the fan-out stands after (short of `through` when there were more
     * positions than FAN_OUT_SPAN), and how many deliveries it made.
     */
    async fanOut (through: number): Promise<{ held: boolean, position: number | null, fanned: number }> {
      const { rows } = await pool.query<{ held: boolean, position: number | null, fanned: number }>(FAN_OUT, [through])
      return rows[0]!
    },

    /**
     * Up to `limit` due deliveries, at most `perWebhook` of each webhook and none of those in
     * `full`, each leased to this instance for `leaseSeconds`.
     */
    async claim (limit: number, leaseSeconds: number, perWebhook: number, full: number[]): Promise<ClaimedDelivery[]> {
      return (await pool.query<ClaimedDelivery>(CLAIM, [limit, leaseSeconds, perWebhook, full])).rows
    },

    /** Logs the attempt and its outcome: whether the delivery was still this attempt's to finish. */
    async finish (delivery: ClaimedDelivery, outcome: AttemptOutcome, { ok, retryForSeconds, nextAttemptSeconds, final }: { ok: boolean, retryForSeconds: number, nextAttemptSeconds: number, final: boolean }): Promise<boolean> {
      const { rows } = await pool.query<{ finished: number }>(FINISH, [delivery.id, ok, outcome.status, outcome.error, outcome.durationMs,
        retryForSeconds, nextAttemptSeconds, final, delivery.attempts, outcome.response])
      return rows[0]!.finished > 0
    },

    /** The endpoint answered: it is not failing. */
    async delivered (webhookId: number): Promise<void> {
      await pool.query(ENDPOINT_DELIVERED, [webhookId])
    },

    /** The endpoint failed: whether it has done so for `seconds`, and was disabled now. */
    async failed (webhookId: number, seconds: number, audited: boolean): Promise<boolean> {
      const { rows } = await pool.query<{ disabled: boolean }>(ENDPOINT_FAILED, [webhookId, seconds, audited])
      return rows[0]!.disabled
    },

    /** Gives back a delivery claimed here whose attempt a shutdown cut short. */
    async release (delivery: ClaimedDelivery): Promise<void> {
      await pool.query(RELEASE, [delivery.id, delivery.attempts])
    },

    /** Deletes the deliveries older than `seconds`, and their attempts, a batch at a time: how many went. */
    async sweep (seconds: number): Promise<number> {
      return (await pool.query(SWEEP, [seconds])).rowCount!
    },

    /** Whether any webhook is enabled: else nothing is fanned out nor sent. */
    async anyEnabled (): Promise<boolean> {
      return (await pool.query<{ enabled: boolean }>(ENABLED)).rows[0]!.enabled
    }
  }
}

export type DeliveryQueue = ReturnType<typeof deliveryQueue>
