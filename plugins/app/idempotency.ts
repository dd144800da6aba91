import { createHash, createHmac, createSecretKey } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { composed, insert, runOnPool, type CteWrite, type Insertion, type PreparedQuery } from '../../lib/db/prepared-query.js'
import { recordFields } from '../../lib/db/record-text.js'
import { canonicalJson } from '../../lib/http/canonical-json.js'
import { CodedError } from '../../lib/http/error-codes.js'
import { Statement, type Scalar } from '../../lib/db/statement-query.js'

/** What a create made: the answer's body, the new record's address and, if it has one, its tag. */
export interface Created {
  body: unknown
  location: string
  etag?: string | undefined
}

/** What a batch of creates made: its answer's body, 200 (each row tells its own status). */
export interface BatchAnswer {
  status: 200
  body: unknown
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
    createOnce: (reply: FastifyReply, create: (db: Knex) => Promise<Created | BatchAnswer>, streamed?: StreamedBody) => Promise<FastifyReply>
    /**
     * `createOnce` for a create that is one INSERT (`insertion`), answered from the row it
     * returns (`answer`). With an `Idempotency-Key`, the key is kept by that same statement:
     * one round trip, no transaction.
     */
    insertOnce: <Row, Args extends Scalar[]>(reply: FastifyReply, insertion: Insertion<Row, Args>, answer: (row: Row) => Created) => Promise<FastifyReply>
  }
}

/**
 * A body read as it streams in (an import's file), rather than parsed before the handler:
 * the request is told apart by the digest of its bytes, known once all are read. `create`
 * reads it; a repeat that is answered from its key reads it with `drain`, for its digest.
 */
export interface StreamedBody {
  drain: () => Promise<void>
  digest: () => string
}

/** Answers what a create made: 201 with its Location (and ETag), or a batch's 200. */
export function sendCreated (reply: FastifyReply, created: Created | BatchAnswer): FastifyReply {
  reply.code(answeredStatus(created)).headers(answeredHeaders(created))
  return reply.send(created.body)
}

const answeredStatus = (created: Created | BatchAnswer) => 'status' in created ? created.status : 201
/** A create's Location and ETag; none for a batch. */
const answeredHeaders = (created: Created | BatchAnswer): Record<string, string> => 'location' in created
  ? { location: created.location, ...(created.etag !== undefined && { etag: created.etag }) }
  : {}

/** Seconds a repeat of a request still running should wait before trying again. */
const RETRY_AFTER_SECONDS = 1
/** Expired keys deleted at a time, and how often each instance sweeps at the most. */
const SWEEP_BATCH = 10_000
const SWEEP_EVERY_MS = 60_000
/** The form of the fingerprints kept now: an HMAC of the request with its body in canonical form. */
const FINGERPRINT_FORM = '2:'

interface StoredAnswer { status: number, headers: Record<string, string>, body: string }
interface KeptRecord { fingerprint: string, unexpired: boolean, record: string | null, status: number, headers: Record<string, string> | null, body: string | null }

// One statement, one round trip: the key's lock, taken without waiting (a repeat while the
// first's transaction runs gets 409 at once rather than holding a connection), and the key's
// answer if it has one.
const LOOK_UP = `
  select l.locked, k.fingerprint, k.status, k.headers, k.body
  from (select pg_try_advisory_xact_lock(hashtextextended(?, 0)) as locked) l
  left join idempotency_keys k on l.locked and k.scope = ? and k.key = ? and k.expires_at > now()`

// An expired key is a new key. No row comes back where an unexpired key stands already: another
// request with it committed between this one's look-up and its lock (the look-up's snapshot
// is taken before the lock).
const KEEP = `
  insert into idempotency_keys (scope, key, fingerprint, status, headers, body, expires_at)
  values (?, ?, ?, ?, ?, ?, now() + make_interval(secs => ?))
  on conflict (scope, key) do update set fingerprint = excluded.fingerprint, status = excluded.status,
    headers = excluded.headers, body = excluded.body, record = null, expires_at = excluded.expires_at
  where idempotency_keys.expires_at <= now()
  returning 1`

// The key kept in the INSERT's own statement, with the row it returned: an INSERT and its key
// commit together or not at all. A repeat's INSERT fails on the key's primary key (after the
// first's statement commits, if it is still running) or on a unique column of its own
// record, and it is then answered from the kept row. The row is kept behind the statement's
// own mark, so that a version of the service whose INSERT returns other columns does not read
// it as its own.
const keptBy = (mark: string, values: Scalar[]): CteWrite => ({
  name: `kept ${mark}`,
  cte: first => `kept as (insert into idempotency_keys (scope, key, fingerprint, status, record, expires_at)
    select $${first}, $${first + 1}, $${first + 2}, 201, '${mark} ' || created::text, now() + make_interval(secs => $${first + 3}) from created)`,
  values
})

const FIND = `select fingerprint, expires_at > now() as unexpired, record, status, headers, body
  from idempotency_keys where scope = $1 and key = $2`
const DROP_EXPIRED = 'delete from idempotency_keys where scope = $1 and key = $2 and expires_at <= now()'

/** Whether a statement failed on a key kept already (by a repeat, or an expired key's row). */
const isKeyConflict = (error: unknown) => (error as { constraint?: string }).constraint === 'idempotency_keys_pkey'

const SWEEP = `delete from idempotency_keys where ctid = any(array(
  select ctid from idempotency_keys where expires_at <= now() limit ${SWEEP_BATCH}))`

/**
 * `Idempotency-Key` on every create (the IETF httpapi draft "The Idempotency-Key HTTP Header
 * Field"). Keys are the caller's on authenticated routes and the route's on open ones; a
 * repeat with the same key and the same request (method, route, body whatever the order of
 * its keys) gets the first answer
 * again with `Idempotent-Replayed: true`; with another request, 422; while the first still
 * runs, 409 with Retry-After (`createOnce`), or the first's answer once its statement commits
 * (`insertOnce`: a create of one INSERT, whose key is kept in that INSERT's own statement, one
 * round trip as a create without a key is). Only a success is kept (a create's 201, a batch's
 * 200): an error leaves the key free to retry, as the statement or transaction that would have
 * kept it rolled back with the write.
 */
export default fp(async (fastify) => {
  const { knex } = fastify
  const ttlSeconds = fastify.config.idempotencyTtlSeconds
  // Requests are told apart by an HMAC, so that the table keeps no body (a register's password).
  const secret = createSecretKey(createHmac('sha256', fastify.config.auth.jwtSecret).update('idempotency keys').digest())

  const find = new Statement<KeptRecord>('idempotency.find', FIND)
  const dropExpired = new Statement<never>('idempotency.drop-expired', DROP_EXPIRED)
  // The mark of each INSERT: a digest of its SQL, which names the columns it returns.
  const marks = new WeakMap<object, string>()
  function markOf (query: PreparedQuery<never, unknown>): string {
    let mark = marks.get(query)
    if (mark === undefined) marks.set(query, mark = createHash('sha256').update(query.text).digest('base64url').slice(0, 12))
    return mark
  }

  /** Sends an answer as it was kept: serialized already. */
  function sendSerialized (reply: FastifyReply, { status, headers, body }: StoredAnswer): FastifyReply {
    return reply.code(status).headers(headers).type('application/json; charset=utf-8').send(body)
  }

  // The request is its method, its route (creates take no path parameters), its body in
  // canonical form, so that a retry whose body was serialized again with its keys in another
  // order is the same request, and the query of a route that takes one (a batch's mode).
  // `2:` names the form.
  const hmacOf = (request: FastifyRequest, body: string | undefined) => createHmac('sha256', secret)
    .update(`${request.method} ${request.routeOptions.url!}\n${body}`)
    .update(request.routeOptions.schema?.querystring === undefined ? '' : `\n?${canonicalJson(request.query)}`)
    .digest('base64url')
  const fingerprint = (request: FastifyRequest) => `${FINGERPRINT_FORM}${hmacOf(request, canonicalJson(request.body))}`
  /**
   * Whether a kept fingerprint is this request's. One kept before the canonical form (no form
   * named; at most IDEMPOTENCY_TTL after an upgrade) was over the body as it came: a retry
   * across the upgrade still matches if it is the same text again.
   */
  const isThisRequest = (kept: string, request: FastifyRequest, print: string) => kept.startsWith(FINGERPRINT_FORM)
    ? kept === print
    : kept === hmacOf(request, JSON.stringify(request.body))

  // The route's header schema has checked the key's form.
  const keyOf = (request: FastifyRequest) => request.headers['idempotency-key'] as string | undefined
  // `user` is the caller on routes behind the token check, and null on the open ones.
  const scopeOf = (request: FastifyRequest) => request.user ? `user ${request.user.id}` : `route ${request.method} ${request.routeOptions.url!}`
  const underWay = (reply: FastifyReply) => {
    reply.header('retry-after', String(RETRY_AFTER_SECONDS))
    return new CodedError('idempotency_key_in_progress', 'A request with this Idempotency-Key is under way: try again shortly')
  }
  const keptByAnotherVersion = () => new CodedError('idempotency_key_reused', 'This Idempotency-Key\'s answer was kept by another version of this service, which created the record: use a new key for a new request')
  const otherRequest = () => new CodedError('idempotency_key_reused', 'This Idempotency-Key was used with another request: use a new key for a new request')

  fastify.decorateRequest('createOnce', async function (this: FastifyRequest, reply: FastifyReply, create: (db: Knex) => Promise<Created | BatchAnswer>, streamed?: StreamedBody) {
    const key = keyOf(this)
    if (key === undefined) {
      const created = await this.guardWrite(() => create(knex))
      return sendCreated(reply, created)
    }
    const scope = scopeOf(this)
    // A streamed body's print is known once it has all been read.
    const printOf = () => streamed === undefined ? fingerprint(this) : `${FINGERPRINT_FORM}${hmacOf(this, `sha256 ${streamed.digest()}`)}`
    const print = streamed === undefined ? printOf() : undefined
    const outcome = await this.guardWrite(() => knex.transaction(async trx => {
      const { rows: [found] } = await trx.raw<{ rows: [{ locked: boolean, fingerprint: string | null } & StoredAnswer] }>(LOOK_UP, [`${scope}\n${key}`, scope, key])
      if (!found.locked) throw underWay(reply)
      // Kept: compared once the transaction has ended (a streamed body is read to the end
      // first, at the client's pace, holding no connection).
      if (found.fingerprint !== null) return { ...found, fingerprint: found.fingerprint }
      const created = await create(trx)
      const status = answeredStatus(created)
      const body = reply.code(status).serialize(created.body) as string
      const headers = answeredHeaders(created)
      const kept = await trx.raw(KEEP, [scope, key, print ?? printOf(), status, headers, body, ttlSeconds])
      // Another request with the key committed between this one's look-up and its lock.
      if (kept.rowCount === 0) throw underWay(reply)
      return { status, headers, body, fresh: true }
    }))
    if (!('fresh' in outcome)) {
      await streamed?.drain()
      if (!isThisRequest(outcome.fingerprint, this, print ?? printOf())) throw otherRequest()
      reply.header('idempotent-replayed', 'true')
      fastify.metrics.idempotencyReplays.inc()
    }
    return sendSerialized(reply, outcome)
  })

  fastify.decorateRequest('insertOnce', async function <Row, Args extends Scalar[]> (this: FastifyRequest, reply: FastifyReply, insertion: Insertion<Row, Args>, answer: (row: Row) => Created) {
    const sendRow = (row: Row) => sendCreated(reply, answer(row))
    const key = keyOf(this)
    if (key === undefined) return sendRow(await this.guardWrite(() => insert(insertion)))
    const scope = scopeOf(this)
    const print = fingerprint(this)
    const mark = markOf(insertion.query as PreparedQuery<never, unknown>)
    const { statement, values } = composed(insertion, [keptBy(mark, [scope, key, print, ttlSeconds])])
    return this.guardWrite(async () => {
      // A second attempt only once an expired key's row has gone.
      for (let attempt = 1; ; attempt++) {
        const outcome = await runOnPool(fastify.pgPool, statement, values)
          .then(({ rows }) => ({ row: rows[0]! }), (error: unknown) => ({ failure: error }))
        if ('row' in outcome) return sendRow(outcome.row)
        const { failure } = outcome
        // The INSERT failed: as a repeat of a request whose key is kept, or on its own account.
        const { rows: [kept] } = await runOnPool(fastify.pgPool, find, [scope, key])
        if (kept === undefined || !kept.unexpired) {
          if (!isKeyConflict(failure)) throw insertion.failure(failure)
          // The key's row expired: an expired key is a new key, whose row goes, and the INSERT
          // is tried once more.
          /* c8 ignore next -- the key kept again by another request and expired already between the two attempts: only with a lifetime of an instant */
          if (attempt > 1) throw underWay(reply)
          await runOnPool(fastify.pgPool, dropExpired, [scope, key])
          continue
        }
        if (!isThisRequest(kept.fingerprint, this, print)) throw otherRequest()
        if (kept.body === null && !kept.record!.startsWith(`${mark} `)) throw keptByAnotherVersion()
        reply.header('idempotent-replayed', 'true')
        fastify.metrics.idempotencyReplays.inc()
        if (kept.body !== null) return sendSerialized(reply, kept as StoredAnswer)
        // The row is read back as the INSERT's own rows are, by the row function its statement
        // made when PostgreSQL described them: it has just run here, and a statement's
        // description comes before its execution, which failed.
        /* c8 ignore next -- a statement that failed before it was described (a value PostgreSQL refused) ran nowhere with these values: no key kept them */
        if (statement.toRow === undefined) throw insertion.failure(failure)
        return sendRow(statement.toRow(recordFields(kept.record!.slice(mark.length + 1))))
      }
    })
  })

  // Every instance sweeps, a batch at a time, once a minute or once a key's lifetime: expired
  // keys count as absent already, so a sweep that fails only leaves them a while longer.
  fastify.decorate('idempotency', {
    async sweep () {
      try {
        await fastify.pgPool.query(SWEEP)
      /* c8 ignore next 3 -- a database out of reach at the minute of a sweep; the next one catches up */
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not sweep the expired idempotency keys')
      }
    }
  })
  const sweeping = setInterval(() => { void fastify.idempotency.sweep() }, Math.min(ttlSeconds * 1000, SWEEP_EVERY_MS)).unref()
  fastify.addHook('onClose', async () => clearInterval(sweeping))
}, { name: 'idempotency', dependencies: ['config', 'knex', 'sensible', 'request-timing', 'metrics'] })
