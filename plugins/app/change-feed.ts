import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import { settledPosition } from '../../lib/db/settled-position.js'

/** A reader following the feed as it grows: an event stream. */
export interface Follower {
  /** The settled position moved to `through`: read what came up to it. */
  advanced: (through: number) => void
  /** The service is shutting down: end, so that the client resumes on another instance. */
  closing: () => void
}

export interface ChangeFeed {
  /** The settled position, measured after the call (lib/db/settled-position.ts). */
  settled: () => Promise<number>
  /** Tells `follower` of each advance of the settled position until the returned function is called. */
  follow: (follower: Follower) => () => void
  /** Events were committed here: followers here, and on every instance by a notification, look again. */
  committed: () => void
}

declare module 'fastify' {
  interface FastifyInstance {
    changeFeed: ChangeFeed
  }
}

/** The channel that wakes followers on every instance. It carries nothing: readers read the table. */
const CHANNEL = 'change_feed'
/** At most one notification this often from an instance, however many events it commits. */
const NOTIFY_MS = 50
/** How often followers look without being woken: a lost notification, a write of another service. */
const POLL_MS = 250
/**
 * How often at most the settled position is measured for followers, however often woken: each
 * advance has every stream read a page, so under a flood of writes they read in batches.
 */
const LOOK_MS = 50

/**
 * The change feed's wake-ups on this instance. While anyone follows, it measures the settled
 * position when woken (an event committed here, a notification from another instance) and
 * every POLL_MS anyway, and tells the followers when it moved. LISTEN/NOTIFY only wakes: a
 * notification carries no event, so its 8 KB limit and a lost one never matter.
 */
export default fp(async (fastify) => {
  const settled = settledPosition(fastify.database)
  const followers = new Set<Follower>()
  let told = 0
  let measuring = false
  let again = false
  let poll: NodeJS.Timeout | undefined
  let lastLook = 0

  async function look (): Promise<void> {
    if (followers.size === 0) return
    if (fastify.shuttingDown) {
      for (const follower of followers) follower.closing()
      return
    }
    if (measuring) {
      again = true
      return
    }
    measuring = true
    try {
      do {
        again = false
        const wait = lastLook + LOOK_MS - Date.now()
        if (wait > 0) await sleep(wait)
        lastLook = Date.now()
        const through = await settled()
        if (through > told) {
          told = through
          for (const follower of followers) follower.advanced(through)
        }
      } while (again)
    } catch (error) {
      // The next look, at the latest POLL_MS from now, tries again.
      fastify.log.warn({ err: error }, 'could not measure the change feed\'s settled position')
    } finally {
      measuring = false
    }
  }
  const wake = () => { void look() }

  let notifying: NodeJS.Timeout | undefined
  function notifyOthers (): void {
    notifying ??= setTimeout(() => {
      notifying = undefined
      fastify.pgPool.query(`select pg_notify('${CHANNEL}', '')`).catch(
        /* c8 ignore next -- the database went between the commit and this: the others find the events within a poll */
        (error: unknown) => fastify.log.warn({ err: error }, 'could not notify the other instances of new events; they find them within a poll'))
    }, NOTIFY_MS)
  }

  fastify.decorate('changeFeed', {
    settled,
    follow (follower) {
      followers.add(follower)
      poll ??= setInterval(wake, POLL_MS).unref()
      return () => {
        followers.delete(follower)
        if (followers.size === 0) {
          clearInterval(poll)
          poll = undefined
        }
      }
    },
    committed () {
      wake()
      notifyOthers()
    }
  } satisfies ChangeFeed)

  await fastify.notifications.listen(CHANNEL, { notified: wake, listening: wake, lost: () => {} })
  // Closing waits for the requests in flight: the streams end first.
  fastify.addHook('preClose', done => {
    for (const follower of followers) follower.closing()
    done()
  })
  fastify.addHook('onClose', () => {
    clearInterval(poll)
    clearTimeout(notifying)
  })
}, { name: 'change-feed', dependencies: ['knex', 'notifications', 'shutting-down'] })
