import { PassThrough } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CodedError } from '../../../../lib/http/error-codes.js'
import type { FastifyRequest } from 'fastify'
import type { Filter, ListRequest } from '../../../../lib/http/list-query.js'
import { eventsRepository } from './repository.js'
import { eventListFields, eventSchemas, eventSharedSchemas, eventsTag } from './schema.js'

/** How many events a stream reads at a time. */
const STREAM_PAGE = 500
/** How long a client waits before reconnecting to a stream that ended, in milliseconds (the stream's `retry`). */
const RECONNECT_MS = 2_000
/** How many events a filtered stream's read examines at most. */
const SCAN = STREAM_PAGE * 10
/** How long a stream lasts at most before the client reconnects, and its caller is checked again. */
const STREAM_LIFETIME_MS = 5 * 60_000

const expired = (after: number) => new CodedError('cursor_expired', `Events after ${after} may have been swept (EVENTS_RETENTION): read the lists again, then follow the events from the newest`)

/**
 * `/api/events`: the change feed, behind event-list. A page, and a stream, show the events up
 * to the settled position (lib/db/settled-position.ts): a reader skips none.
 */
const events: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: eventsTag, schemas: eventSharedSchemas })
  const repository = eventsRepository(fastify.database)
  const { changeFeed } = fastify
  const heartbeatMs = fastify.config.outbox.heartbeatSeconds * 1_000
  // Permissions come with the migrations only, which have run before routes are registered.
  const guarded = await repository.guardedResources()
  const visible = (request: FastifyRequest, filters: Filter[]) =>
    repository.visibleTo(guarded.filter(resource => !request.user.permissions.has(`${resource}-list`)), filters)

  // The list as its links name it (lib/http/paging.ts): the path without a trailing slash.
  const listScope = fastify.prefix
  fastify.get('/', { schema: eventSchemas.index, onRequest: fastify.can('event-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, eventListFields)
    const after = list.after?.id ?? 0
    const through = await changeFeed.settled()
    // A page that is not full holds every matching event up to `through`: a consumer takes an
    // empty page for "caught up". (A filter that matches few reads far for its page: a
    // stream's reads, which loop on their own, stop at so many events and go on from there.)
    const page = await repository.page({ ...list, filters: visible(request, list.filters) }, through)
    // After the read: a sweep that committed before it is seen here.
    const { lastId, swept } = await repository.standing(through)
    if (after > 0 && after < swept) throw expired(after)
    // Once every event up to the settled position is shown, the next page starts at the last
    // event there is up to it: a consumer polls from it, and a filter that matched none there
    // is not read again. (Not the settled position itself: one drawn by a transaction that
    // never committed may be drawn again after a crash.)
    page.next ??= { values: [], id: Math.max(after, lastId) }
    return fastify.lists.send(reply, list, page, { path: fastify.prefix, envelope: true })
  })

  fastify.get('/stream', { schema: eventSchemas.stream, onRequest: fastify.can('event-list') }, async (request, reply) => {
    // It takes the list's cursors: a consumer streams on from where its pages ended.
    const list = fastify.lists.request(request, eventListFields, undefined, listScope)
    const lastEventId = request.headers['last-event-id']
    // `after=0` is the beginning (the list takes it for no `after`); without any, from now.
    const from = lastEventId === undefined ? request.query.after ?? list.after?.id : Number(lastEventId)
    const read: ListRequest = { ...list, limit: STREAM_PAGE, filters: visible(request, list.filters) }
    const out = new PassThrough()
    const state = { ended: false }
    let wake: (() => void) | undefined
    let unfollow = () => {}
    const timers: { heartbeat?: NodeJS.Timeout, lifetime?: NodeJS.Timeout } = {}
    /** Ends the stream: what was sent is delivered, unless the client is `gone` (then dropped at once). */
    function end (gone: boolean): void {
      if (state.ended) return
      state.ended = true
      unfollow()
      clearInterval(timers.heartbeat)
      clearTimeout(timers.lifetime)
      if (gone) out.destroy()
      else out.end()
      wake?.()
    }
    // From the first wait on: a client that leaves meanwhile is gone when the stream begins.
    reply.raw.on('close', () => end(true))

    const standing = await repository.standing(from ?? await changeFeed.settled())
    if (from !== undefined && from > 0 && from < standing.swept) throw expired(from)
    // A position of an event that exists: a position drawn by a transaction that never
    // committed may be drawn again after a crash, and the event then would come before it.
    let position = from ?? standing.lastId
    if (state.ended) return reply
    let through = position
    unfollow = changeFeed.follow({
      advanced: settled => {
        through = settled
        wake?.()
      },
      closing: () => end(false)
    })
    timers.heartbeat = setInterval(() => out.write(': heartbeat\n\n'), heartbeatMs)
    // Each stream ends within STREAM_LIFETIME_MS, or as its access token expires: the client
    // reconnects, and its caller is checked again (a key revoked, a session ended, a permission
    // taken away).
    timers.lifetime = setTimeout(() => end(false), Math.max(0, Math.min(STREAM_LIFETIME_MS, request.user.exp * 1_000 - Date.now())))

    /** Writes `text`; once the client has all it was sent before, or has gone. */
    async function send (text: string): Promise<void> {
      if (out.write(text)) return
      await new Promise<void>(resolve => {
        const done = () => {
          out.off('drain', done)
          out.off('close', done)
          resolve()
        }
        out.on('drain', done)
        out.on('close', done)
      })
    }

    /** Sends the events up to the settled position, then each as it commits, until the stream ends. */
    async function pump (): Promise<void> {
      // Measured once following: an advance told meanwhile is not missed.
      let upTo = await changeFeed.settled()
      // Said once at least, for a stream from now (0: the beginning, on an empty feed).
      let told = from ?? -1
      while (!state.ended) {
        let standing = { lastId: 0, swept: 0 }
        // Page by page, a bounded scan at a time, up to what was measured (or the end): a
        // filtered read far behind stops at the SCAN-th event on (an event: its position may
        // be told), so that a filter matching few reads no more a page; a stream that keeps up
        // (no more positions to read than that) reads on to the end at once, with no round
        // trip to ask where to stop.
        while (!state.ended) {
          const bound = read.filters.length === 0 || upTo - position <= SCAN ? upTo : await repository.scanBound(position, upTo, SCAN)
          const page = await repository.page({ ...read, after: { values: [], id: position } }, bound)
          // After the read and before its rows go: events after where it began swept meanwhile
          // (a client held back for long) are missing from it, so the stream ends there, and
          // the reconnect is answered 410. (From the beginning, 0, the oldest kept is the beginning.)
          standing = await repository.standing(upTo)
          if (position > 0 && position < standing.swept) return end(false)
          for (const row of page.rows) {
            if (state.ended) return
            await send(`id: ${row.id}\ndata: ${row.json}\n\n`)
            told = row.id
          }
          if (page.next !== undefined) position = page.next.id
          else if (bound < upTo) position = bound
          else break
        }
        position = Math.max(position, standing.lastId)
        // Where the stream stands, though no event matched: an id without data moves the
        // client's Last-Event-ID without an event (EventSource), so a reconnect scans no more.
        if (position > told && !state.ended) {
          await send(`id: ${position}\n\n`)
          told = position
        }
        // Woken when the feed moves past what was read (not past the position told, which
        // stops at the last event: positions drawn for audit entries lie beyond it).
        if (!state.ended && through <= upTo) await new Promise<void>(resolve => { wake = resolve })
        wake = undefined
        upTo = through
      }
    }

    reply.header('content-type', 'text/event-stream; charset=utf-8')
      .header('cache-control', 'no-store')
      // Proxies that buffer answers (nginx) pass this one on as it comes.
      .header('x-accel-buffering', 'no')
    out.write(`retry: ${RECONNECT_MS}\n\n`)
    pump().catch((error: unknown) => {
      request.log.warn({ err: error }, 'an event stream failed: it ends, and the client resumes from its last event')
      end(false)
    })
    // The stream's text is the schema's string, written as it comes.
    return reply.send(out as unknown as string)
  })
}

export default events
