import type { Knex } from 'knex'
import { eventType } from '../../../../lib/db/event-type.js'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { isoText } from '../../../../lib/db/pg-types.js'
import { LAST_DRAWN } from '../../../../lib/db/settled-position.js'
import type { Database } from '../../../../lib/db/prepared-query.js'
import { versionColumn, type Versioned } from '../../../../lib/db/row-versions.js'
import type { Filter, ListRequest } from '../../../../lib/http/list-query.js'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { newSecret } from '../../../../lib/webhooks/signatures.js'
import { Attempt, Delivery, deliveryListFields, type Webhook, type WebhookChange, type WebhookInput } from './schema.js'

/** A webhook's columns as the API shows them: never its secrets. */
const COLUMNS = ['id', 'url', 'types', 'description', 'enabled', 'disabled_reason', 'failing_since',
  'previous_secret_until', 'created_at', 'updated_at'] as const

/** How many of a delivery's attempts its log shows, the latest. */
const ATTEMPTS_SHOWN = 50
/** The filter of a webhook's deliveries; not a field a client sends. */
const OF_WEBHOOK = 'webhook'

/** Data access for webhooks and their deliveries, for the routes of this folder. */
export function webhooksRepository (database: Database) {
  const { knex } = database
  const columnsWithVersion = [...COLUMNS, versionColumn(knex)]
  const attempts = `(select coalesce(json_agg(json_build_object('attempted_at', ${isoText('a.attempted_at')}, 'status', a.status, 'error', a.error,
      'duration_ms', a.duration_ms, 'response', a.response) order by a.id), '[]') from (select * from webhook_attempts
      where delivery_id = webhook_deliveries.id order by id desc limit ${ATTEMPTS_SHOWN}) a) as attempts`
  const deliveryColumns = ['id', knex.raw('event_id::float8 as event_id'), 'state',
    // A disabled webhook's pending deliveries wait (at infinity, or at a time an attempt under
    // way as it was disabled set): no time to show.
    knex.raw(`case when state = 'pending' and next_attempt_at <> 'infinity' and (select enabled from webhooks w where w.id = webhook_deliveries.webhook_id)
      then next_attempt_at end as next_attempt_at`), 'created_at', knex.raw(attempts)]
  const deliveries = keysetTable<Delivery>(database, {
    name: 'webhook_deliveries',
    rows: knex => knex('webhook_deliveries'),
    columns: deliveryColumns,
    schema: Delivery,
    references: [Attempt],
    fields: deliveryListFields,
    idType: 'bigint',
    customFilters: { [OF_WEBHOOK]: (qb, { value }) => qb.where('webhook_id', value as number) }
  })

  return {
    /** Every webhook, in id order. */
    async list (): Promise<Webhook[]> {
      return knex('webhooks').select(COLUMNS).orderBy('id')
    },

    async find (id: number): Promise<Versioned<Webhook> | undefined> {
      if (id > MAX_ID) return undefined
      return knex('webhooks').first(columnsWithVersion).where({ id }) as Promise<Versioned<Webhook> | undefined>
    },

    /**
     * Makes a webhook, for the events after the last position drawn: its record, and its
     * secret, which is shown this once.
     */
    async create ({ url, types, description = '' }: WebhookInput, trx: Knex): Promise<{ record: Versioned<Webhook>, secret: string }> {
      const secret = newSecret()
      // The transaction holds an id before it reads where the feed stands, as a position's
      // drawer does: a reader that measures the settled position meanwhile waits for it, and
      // no event after that position is fanned out before the webhook is there to take it.
      await trx.raw('select pg_current_xact_id()')
      const [record] = await trx('webhooks').insert({
        url,
        types,
        description,
        secret,
        after_position: trx.raw(LAST_DRAWN)
      }).returning(columnsWithVersion)
      return { record: record as Versioned<Webhook>, secret }
    },

    /** The webhook as it stands, locked until `trx` ends. */
    async lock (id: number, trx: Knex): Promise<Versioned<Webhook> | undefined> {
      if (id > MAX_ID) return undefined
      // FOR NO KEY UPDATE: the fan-out's deliveries, which refer to it, are not held up.
      return trx('webhooks').first(columnsWithVersion).where({ id }).forNoKeyUpdate() as Promise<Versioned<Webhook> | undefined>
    },

    /**
     * The webhook as changed, in the write path's transaction. At another URL, it is failing no
     * longer. Disabled, its pending deliveries wait. Enabled again, its failures are forgotten, its pending deliveries are due, and it
     * takes the events from then on: none of the time it was disabled.
     */
    async update (before: Webhook, { enabled, ...changes }: WebhookChange, trx: Knex): Promise<Versioned<Webhook>> {
      const { id } = before
      const switched = enabled !== undefined && enabled !== before.enabled
      if (switched) {
        await trx.raw('select pg_current_xact_id()')
        await trx('webhook_deliveries').where({ webhook_id: id, state: 'pending' }).whereNull('claimed_until')
          .update({ next_attempt_at: enabled ? trx.fn.now() : 'infinity' })
      }
      const reenabled = switched && enabled ? { failing_since: null, last_failure_at: null, disabled_reason: null, after_position: trx.raw(LAST_DRAWN) } : {}
      // Another endpoint has failed nothing yet.
      const moved = changes.url !== undefined && changes.url !== before.url ? { failing_since: null, last_failure_at: null } : {}
      const [webhook] = await trx('webhooks').where({ id })
        .update({ ...changes, ...(switched ? { enabled } : {}), ...reenabled, ...moved, updated_at: trx.fn.now() })
        .returning(columnsWithVersion)
      return webhook as Versioned<Webhook>
    },

    /** A new secret; the current one signs beside it for a day. */
    async rotateSecret (id: number, trx: Knex): Promise<{ record: Versioned<Webhook>, secret: string }> {
      const secret = newSecret()
      const [record] = await trx('webhooks').where({ id }).update({
        previous_secret: trx.raw('secret'),
        previous_secret_until: trx.raw('now() + interval \'24 hours\''),
        secret,
        updated_at: trx.fn.now()
      }).returning(columnsWithVersion)
      return { record: record as Versioned<Webhook>, secret }
    },

    /** Deletes the webhook and its deliveries. */
    async remove (id: number, trx: Knex): Promise<void> {
      await trx('webhooks').where({ id }).delete()
    },

    /** One page of the webhook's deliveries. */
    deliveries (webhookId: number, list: ListRequest) {
      const filters: Filter[] = [...list.filters, { field: OF_WEBHOOK, operator: 'eq', value: webhookId }]
      return deliveries.query({ ...list, filters })
    },

    /**
     * The delivery of the webhook, made pending and due at once; none if there is none; what
     * keeps it from being sent, if anything: an attempt of it in flight, its webhook disabled,
     * or a type its webhook no longer takes (one who changed the webhook since may not read it).
     */
    async retry (webhookId: number, deliveryId: number, trx: Knex): Promise<Delivery | 'in flight' | 'disabled' | { notTaken: string } | undefined> {
      const found = await trx('webhook_deliveries as d').join('webhooks as w', 'w.id', 'd.webhook_id')
        .leftJoin('change_outbox as o', 'o.id', 'd.event_id')
        .where({ 'd.id': deliveryId, 'd.webhook_id': webhookId })
        .first('w.enabled', trx.raw('coalesce(d.claimed_until > now(), false) as in_flight'),
          trx.raw(`o.id is null or ${eventType('o')} = any (w.types) as taken`), trx.raw(`${eventType('o')} as type`)).forUpdate('d')
      if (found === undefined) return undefined
      if (found.in_flight === true) return 'in flight'
      if (found.enabled !== true) return 'disabled'
      if (found.taken !== true) return { notTaken: found.type as string }
      await trx('webhook_deliveries').where({ id: deliveryId }).update({ state: 'pending', next_attempt_at: trx.fn.now() })
      return deliveries.find(deliveryId, trx)
    }
  }
}
