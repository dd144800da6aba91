import { createHmac, createSecretKey } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'

/** What a create made: the answer's body, the new record's address and, if it has one, its tag. */
export interface Created {
  body: unknown
  location: string
  etag?: string | undefined
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The keys of all instances, in PostgreSQL. */
    idempotency: { sweep: () => Promise<void> }
  }
  interface FastifyRequest {
    /**
     * Runs a create and answers 201 with what it made. With an `Idempotency-Key`, once: the
     * create runs in a transaction (`db`) that also keeps the key and the answer, and a repeat
     * gets that answer again (plugins/app/idempotency.ts).
     */
    createOnce: (reply: FastifyReply, create: (db: Knex) => Promise<Created>) => Promise<FastifyReply>
  }
}

/** Seconds a repeat of a request still running should wait before trying again. */
const RETRY_AFTER_SECONDS = 1
/** Expired keys deleted at a time, and how often each instance sweeps at the most. */
const SWEEP_BATCH = 10_000
const SWEEP_EVERY_MS = 60_000

interface StoredAnswer { status: number, headers: Record<string, string>, body: string }

// One statement, one round trip: the key's lock, taken without waiting (a repeat while the first
// runs gets 409 at once rather than holding a connection), and the key's answer if it has one.
const LOOK_UP = `
  select l.locked, k.fingerprint, k.status, k.headers, k.body
  from (select pg_try_advisory_xact_lock(hashtextextended(?, 0)) as locked) l
  left join idempotency_keys k on l.locked and k.scope = ? and k.key = ? and k.expires_at > now()`

// An expired key is a new key. No row comes back where a live key stands already: another
// request with it committed between this one's look-up and its lock (the look-up's snapshot
// is taken before the lock).
const KEEP = `
  insert into idempotency_keys (scope, key, fingerprint, status, headers, body, expires_at)
  values (?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?))
  on conflict (scope, key) do update set fingerprint = excluded.fingerprint, status = excluded.status,
    headers = excluded.headers, body = excluded.body, expires_at = excluded.expires_at
  where idempotency_keys.expires_at <= now()
  returning 1`

const SWEEP = `delete from idempotency_keys where ctid = any(array(
  select ctid from idempotency_keys where expires_at <= now() limit ${SWEEP_BATCH}))`

/**
 * `Idempotency-Key` on every create (the IETF httpapi draft "The Idempotency-Key HTTP Header
 * Field"). Keys are the caller's on authenticated routes and the route's on open ones; a
 * repeat with the same key and the same request (method, route, body) gets the first answer
 * again with `Idempotent-Replayed: true`; with another request, 422; while the first still
 * runs, 409 with Retry-After. Only a 201 is kept: an error leaves the key free to retry, as
 * the transaction that would have kept it rolled back with the write.
 */
export default fp(async (fastify) => {
  const { knex } = fastify
  const ttlSeconds = fastify.config.idempotencyTtlSeconds
  // Requests are told apart by an HMAC, so that the table keeps no body (a register's password).
  const secret = createSecretKey(createHmac('sha256', fastify.config.auth.jwtSecret).update('idempotency keys').digest())

  function sendCreated (reply: FastifyReply, { location, etag }: Created, body: unknown): FastifyReply {
    reply.code(201).header('location', location)
    if (etag !== undefined) reply.header('etag', etag)
    return reply.send(body)
  }

  function fingerprint (request: FastifyRequest): string {
    return createHmac('sha256', secret)
      .update(`${request.method} ${request.routeOptions.url!}\n${JSON.stringify(request.body)}`)
      .digest('base64url')
  }

  fastify.decorateRequest('createOnce', async function (this: FastifyRequest, reply: FastifyReply, create: (db: Knex) => Promise<Created>) {
    // The route's header schema has checked the key's form.
    const key = this.headers['idempotency-key'] as string | undefined
    if (key === undefined) {
      const created = await this.guardWrite(() => create(knex))
      return sendCreated(reply, created, created.body)
    }
    // `user` is the caller on routes behind the token check, and null on the open ones.
    const scope = this.user ? `user ${this.user.id}` : `route ${this.method} ${this.routeOptions.url!}`
    const print = fingerprint(this)
    // Thrown inside the transaction, so that it rolls back whatever the create wrote.
    const underWay = () => {
      reply.header('retry-after', String(RETRY_AFTER_SECONDS))
      return fastify.httpErrors.conflict('A request with this Idempotency-Key is under way: try again shortly')
    }
    const outcome = await this.guardWrite(() => knex.transaction(async trx => {
      const { rows: [found] } = await trx.raw<{ rows: [{ locked: boolean, fingerprint: string | null } & StoredAnswer] }>(LOOK_UP, [`${scope}\n${key}`, scope, key])
      if (!found.locked) throw underWay()
      if (found.fingerprint !== null) {
        if (found.fingerprint !== print) throw fastify.httpErrors.unprocessableEntity('This Idempotency-Key was used with another request: use a new key for a new request')
        return found
      }
      const created = await create(trx)
      const body = reply.code(201).serialize(created.body) as string
      const headers = { location: created.location, ...(created.etag !== undefined && { etag: created.etag }) }
      const kept = await trx.raw(KEEP, [scope, key, print, 201, headers, body, ttlSeconds])
      // Another request with the key committed between this one's look-up and its lock.
      if (kept.rowCount === 0) throw underWay()
      return { status: 201, headers, body, fresh: true }
    }))
    if (!('fresh' in outcome)) reply.header('idempotent-replayed', 'true')
    return reply.code(outcome.status).headers(outcome.headers).type('application/json; charset=utf-8').send(outcome.body)
  })

  // Every instance sweeps, a batch at a time, once a minute or once a key's lifetime: expired
  // keys count as absent already, so a sweep that fails only leaves them a while longer.
  fastify.decorate('idempotency', {
    async sweep () {
      try {
        await fastify.pgPool.query({ name: 'idempotency.sweep', text: SWEEP })
      /* c8 ignore next 3 -- a database out of reach at the minute of a sweep; the next one catches up */
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not sweep the expired idempotency keys')
      }
    }
  })
  const sweeping = setInterval(() => { void fastify.idempotency.sweep() }, Math.min(ttlSeconds * 1000, SWEEP_EVERY_MS)).unref()
  fastify.addHook('onClose', async () => clearInterval(sweeping))
}, { name: 'idempotency', dependencies: ['config', 'knex', 'sensible', 'request-timing'] })
