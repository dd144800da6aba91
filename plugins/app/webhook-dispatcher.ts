import { setMaxListeners } from 'node:events'
import fp from 'fastify-plugin'
import { sweepHourly } from '../../lib/db/hourly-sweep.js'
import { packageInfo } from '../../lib/process/package-info.js'
import { retryDelay } from '../../lib/webhooks/backoff.js'
import { deliveryQueue, type ClaimedDelivery } from '../../lib/webhooks/queue.js'
import { send, type AttemptOutcome } from '../../lib/webhooks/send.js'
import { signature } from '../../lib/webhooks/signatures.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhookDispatcher: {
      /** A webhook or a delivery was written here: look again now for webhooks enabled and deliveries due. */
      wake: () => void
      /** Deletes the deliveries past EVENTS_RETENTION, a batch at a time: how many went. */
      sweep: () => Promise<number>
    }
  }
}

/** Deliveries in flight at once on an instance. */
const CONCURRENCY = 16
/** Deliveries to one webhook in flight at once on an instance: an endpoint that hangs holds no more places. */
const PER_WEBHOOK = 4
/** How long a claimed delivery is this instance's beyond its attempt's time limit: past it (the instance died), another claims it. */
const LEASE_MARGIN_MS = 5_000
/** How often an instance with webhooks enabled looks for due deliveries: retries, and those another instance fanned out. */
const POLL_MS = 1_000
/** How often an instance without webhooks enabled looks whether one has been since. */
const CHECK_MS = 10_000

const USER_AGENT = `${packageInfo.name}/${packageInfo.version} (webhooks)`

const ok = (outcome: AttemptOutcome) => outcome.status !== null && outcome.status >= 200 && outcome.status < 300

/**
 * The webhooks' dispatcher, on every instance. While a webhook is enabled it follows the
 * change feed: each advance of the settled position fans the new events out into deliveries
 * (lib/webhooks/queue.ts; one instance at a time does it), and it claims the due deliveries,
 * CONCURRENCY at a time, and sends them, signed as the Standard Webhooks specification says.
 * A failed attempt is tried again later (lib/webhooks/backoff.ts), until WEBHOOK_RETRY_FOR
 * has passed; an endpoint that has failed for WEBHOOK_DISABLE_AFTER is disabled.
 */
export default fp(async (fastify) => {
  const queue = deliveryQueue(fastify.pgPool)
  const { webhooks: settings, audit } = fastify.config
  const log = fastify.log.child({ component: 'webhooks' })
  const leaseSeconds = (settings.timeoutMs + LEASE_MARGIN_MS) / 1_000
  const shutdown = new AbortController()
  // Each attempt in flight listens for the shutdown.
  setMaxListeners(CONCURRENCY + 1, shutdown.signal)
  const inFlight = new Map<number, Promise<void>>()
  /** Attempts in flight by webhook. */
  const perWebhook = new Map<number, number>()
  const full = () => [...perWebhook].filter(([, n]) => n >= PER_WEBHOOK).map(([id]) => id)
  let active = false
  // A function, as the claiming loop awaits and `setActive` may change it meanwhile.
  const isActive = () => active
  let unfollow: (() => void) | undefined
  let poll: NodeJS.Timeout | undefined

  /** Signs and sends the delivery, then records the attempt. */
  async function deliver (delivery: ClaimedDelivery): Promise<void> {
    const { event } = delivery
    let outcome: AttemptOutcome
    if (event === null) {
      outcome = { status: null, error: 'the event was swept (EVENTS_RETENTION) before it was delivered', response: '', durationMs: 0 }
    } else if (!delivery.taken) {
      outcome = { status: null, error: `the webhook no longer takes ${String(event.type)}`, response: '', durationMs: 0 }
    } else {
      const body = JSON.stringify(event)
      const id = String(event.id)
      const timestamp = Math.floor(Date.now() / 1_000)
      const headers = { 'webhook-id': id, 'webhook-timestamp': String(timestamp), 'webhook-signature': signature(delivery.secrets, id, timestamp, body), 'user-agent': USER_AGENT }
      outcome = await send({ url: delivery.url, headers, body }, { timeoutMs: settings.timeoutMs, allowPrivate: settings.allowPrivate, signal: shutdown.signal })
    }
    const delivered = ok(outcome)
    // Cut short by the shutdown: another instance sends it at once.
    if (shutdown.signal.aborted && !delivered) return queue.release(delivery)
    await queue.finish(delivery, outcome, {
      ok: delivered,
      final: event === null || !delivery.taken,
      retryForSeconds: settings.retryForMs / 1_000,
      nextAttemptSeconds: delivered ? 0 : retryDelay(delivery.attempts, settings.firstRetryMs) / 1_000
    })
    // A delivery given up unsent (its event swept, or of a type no longer taken) tells nothing of the endpoint.
    if (event === null || !delivery.taken) return
    if (delivered) await queue.delivered(delivery.webhook_id)
    else if (await queue.failed(delivery.webhook_id, settings.disableAfterMs / 1_000, audit.enabled)) {
      log.warn({ webhookId: delivery.webhook_id }, 'disabled a webhook whose deliveries all failed for WEBHOOK_DISABLE_AFTER')
    }
  }

  let claiming: Promise<void> | undefined
  let claimAgain = false
  /** Claims and sends due deliveries until none is due or CONCURRENCY are in flight. */
  function deliverDue (): Promise<void> {
    if (claiming) {
      claimAgain = true
      return claiming
    }
    claiming = claimAll().finally(() => { claiming = undefined })
    return claiming
  }
  async function claimAll (): Promise<void> {
    try {
      do {
        claimAgain = false
        while (isActive() && !shutdown.signal.aborted && inFlight.size < CONCURRENCY) {
          const wanted = CONCURRENCY - inFlight.size
          const claimed = await queue.claim(wanted, leaseSeconds, PER_WEBHOOK, full())
          for (const delivery of claimed) {
            perWebhook.set(delivery.webhook_id, (perWebhook.get(delivery.webhook_id) ?? 0) + 1)
            const attempt = deliver(delivery)
              /* c8 ignore next -- the database failing mid-attempt: the delivery's lease ends, and it is claimed again */
              .catch((error: unknown) => log.warn({ err: error, deliveryId: delivery.id }, 'could not record a webhook delivery\'s attempt: it is tried again once its lease ends'))
              .finally(() => {
                inFlight.delete(delivery.id)
                const left = perWebhook.get(delivery.webhook_id)! - 1
                if (left === 0) perWebhook.delete(delivery.webhook_id)
                else perWebhook.set(delivery.webhook_id, left)
                void deliverDue()
              })
            inFlight.set(delivery.id, attempt)
          }
          if (claimed.length < wanted) break
        }
      } while (claimAgain)
    /* c8 ignore next 3 -- the database failing between polls: the next poll tries again */
    } catch (error) {
      log.warn({ err: error }, 'could not claim webhook deliveries; the next poll tries again')
    }
  }

  let fanningOut: Promise<void> | undefined
  /** The highest settled position told, and the position the fan-out is known to have reached. */
  let fanOutTo = 0
  let fannedThrough = 0
  /**
   * Gives the events up to the settled position their deliveries, then sends them. When another
   * instance holds the fan-out, or it fails, the next poll tries again: nothing waits for the
   * next write.
   */
  function fanOut (through = fanOutTo): Promise<void> {
    fanOutTo = Math.max(fanOutTo, through)
    if (fanningOut || fannedThrough >= fanOutTo) return fanningOut ?? Promise.resolve()
    fanningOut = fanOutAll().finally(() => { fanningOut = undefined })
    return fanningOut
  }
  async function fanOutAll (): Promise<void> {
    try {
      while (fannedThrough < fanOutTo && !shutdown.signal.aborted) {
        const { held, position, fanned } = await queue.fanOut(fanOutTo)
        if (fanned > 0) void deliverDue()
        // Another instance fanning out at this instant (a race the two-instance tests meet only
        // sometimes): the next poll looks again.
        /* c8 ignore next */
        if (!held) break
        fannedThrough = position!
      }
    /* c8 ignore next 3 -- the database failing between looks: the next poll tries again */
    } catch (error) {
      log.warn({ err: error }, 'could not fan events out to webhooks; the next poll tries again')
    }
  }

  function setActive (enabled: boolean): void {
    if (enabled === active || shutdown.signal.aborted) return
    active = enabled
    if (enabled) {
      unfollow = fastify.changeFeed.follow({ advanced: through => { void fanOut(through) }, closing: () => {} })
      poll = setInterval(() => {
        void fanOut()
        void deliverDue()
      }, POLL_MS).unref()
      void deliverDue()
    } else {
      unfollow?.()
      clearInterval(poll)
    }
  }

  async function check (): Promise<void> {
    try {
      setActive(await queue.anyEnabled())
    /* c8 ignore next 3 -- the database failing between checks: the next check tries again */
    } catch (error) {
      log.warn({ err: error }, 'could not look for enabled webhooks; the next check tries again')
    }
  }
  const checks = setInterval(() => { void check() }, CHECK_MS).unref()

  fastify.decorate('webhookDispatcher', {
    wake () {
      void check().then(() => deliverDue())
    },
    sweep: () => queue.sweep(fastify.config.outbox.retentionSeconds)
  })
  sweepHourly(fastify, 'the webhooks\' deliveries', fastify.webhookDispatcher.sweep)

  fastify.addHook('onReady', check)
  // Attempts in flight are cut short and given back, for another instance to send at once,
  // before the pool closes (onClose hooks run in the reverse order of the plugins').
  fastify.addHook('onClose', async () => {
    shutdown.abort()
    clearInterval(checks)
    clearInterval(poll)
    unfollow?.()
    await Promise.allSettled([claiming, fanningOut])
    await Promise.allSettled(inFlight.values())
  })
}, { name: 'webhook-dispatcher', dependencies: ['config', 'knex', 'change-feed'] })
