import type { Knex } from 'knex'

const PERMISSIONS = ['webhook-list', 'webhook-create', 'webhook-edit', 'webhook-delete']

/**
 * Webhooks: endpoints that receive the change feed's events by HTTP POST
 * (plugins/app/webhook-dispatcher.ts).
 *
 * - `webhooks`: an endpoint, the event types it takes, and its signing secrets. A secret must
 *   be kept as it is, to sign with: it is never shown after its creation or rotation.
 * - `webhook_deliveries`: an event owed to an endpoint, a row each, written once by the
 *   fan-out, which follows the feed from `feed_readers`' position. Pending rows are claimed by
 *   one instance at a time (FOR UPDATE SKIP LOCKED) until `claimed_until`, their
 *   `next_attempt_at` pushed past it, so that one whose instance died is claimed again. A
 *   disabled webhook's pending rows wait at `infinity`, out of the claims' way.
 * - `webhook_attempts`: every attempt of a delivery, as its log shows it.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`create table webhooks (
    id integer generated always as identity primary key,
    url text not null,
    types text[] not null,
    description text not null default '',
    secret text not null,
    previous_secret text,
    previous_secret_until timestamptz,
    enabled boolean not null default true,
    disabled_reason text,
    failing_since timestamptz,
    last_failure_at timestamptz,
    after_position bigint not null,
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now()
  )`)
  await knex.raw(`create table webhook_deliveries (
    id bigint generated always as identity primary key,
    webhook_id integer not null references webhooks on delete cascade,
    event_id bigint not null,
    state text not null default 'pending' check (state in ('pending', 'delivered', 'failed')),
    attempts integer not null default 0,
    next_attempt_at timestamptz not null default now(),
    claimed_until timestamptz,
    created_at timestamptz not null default now(),
    unique (webhook_id, event_id)
  )`)
  // An endpoint's due deliveries, the longest due first, then in event order.
  await knex.raw('create index webhook_deliveries_due on webhook_deliveries (webhook_id, next_attempt_at, event_id) where state = \'pending\'')
  await knex.raw('create index webhook_deliveries_of_webhook on webhook_deliveries (webhook_id, id)')
  await knex.raw(`create table webhook_attempts (
    id bigint generated always as identity primary key,
    delivery_id bigint not null references webhook_deliveries on delete cascade,
    attempted_at timestamptz not null default now(),
    status integer,
    error text,
    duration_ms integer not null,
    response text not null default ''
  )`)
  await knex.raw('create index webhook_attempts_of_delivery on webhook_attempts (delivery_id, id)')
  // Where the fan-out stands in the feed: the events up to it have their deliveries.
  await knex.raw('create table feed_readers (name text primary key, position bigint not null)')
  await knex.raw('insert into feed_readers select \'webhooks\', last_value from change_positions')

  await knex('permissions').insert(PERMISSIONS.map(name => ({ name })))
  await knex.raw(`insert into role_permissions (role_id, permission_id)
    select r.id, p.id from roles r, permissions p where r.name = 'Admin' and p.name = any(?)`, [PERMISSIONS])
}

export async function down (knex: Knex): Promise<void> {
  await knex('permissions').whereIn('name', PERMISSIONS).delete()
  await knex.raw('drop table feed_readers, webhook_attempts, webhook_deliveries, webhooks')
}
