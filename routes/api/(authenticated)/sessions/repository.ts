import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import type { CallerCache } from '../../../../lib/auth/caller-cache.js'
import { countAttempt, type AttemptCount } from '../../../../lib/auth/attempt-counts.js'
import { insert, insertion, prepare, type CteWrite, type Database } from '../../../../lib/db/prepared-query.js'
import { oncePerDatabase } from '../../../../lib/db/once-per-database.js'
import { newRefreshToken, refreshHash } from '../../../../lib/auth/refresh-tokens.js'
import { REAUTHENTICATION_SECONDS } from '../../../../lib/auth/credential-queries.js'
import type { LiveSession } from '../../../../plugins/app/auth.js'
import type { Session } from './schema.js'

/** A session as its user sees it, but for whether it is the caller's own (a request's, not a row's). */
export type SessionRecord = Omit<Session, 'current'>

/** A session a statement ended, and whose it was. */
export type EndedSession = SessionRecord & { user_id: number }

/** Where a session is started from, as the user's list of sessions shows it. */
export const sessionClient = (request: FastifyRequest) => ({ userAgent: request.headers['user-agent'], ip: request.ip })

/** A session a login or a registration started: its first refresh token, and the sessions it ended past the cap. */
export interface StartedSession {
  session: LiveSession
  refreshToken: string
  issuedAt: number
  superseded: number[]
}

/** What a refresh token presented came to. */
export type Refresh =
  | { outcome: 'spent', session: LiveSession, issuedAt: number }
  | { outcome: 'repeated', session: LiveSession, issuedAt: number }
  /** Spent before, past the grace: `sessionId`'s session is to end (`endReused`). */
  | { outcome: 'reused', sessionId: number }
  | { outcome: 'unknown' | 'expired' | 'ended' }

/** Why a session ended, as `sessions.end_reason` keeps it. */
export type EndReason = 'logout' | 'ended by its user' | 'all sessions ended' | 'refresh token reused' | 'superseded' | 'reauthentication failed'

/**
 * Live sessions a user may have: a login past it ends the oldest. Logins are rate limited, but
 * over SESSION_MAX_AGE they would add up without bound, and GET /api/sessions lists them all.
 */
export const SESSIONS_PER_USER = 100

/** Wrong codes or passkeys a session may try to reauthenticate: the last ends it. */
export const REAUTHENTICATION_FAILURES = 5

const SESSION_COLUMNS = 'id::float8 as id, created_at, last_used_at, expires_at, user_agent, ip'
const LIVE = 'ended_at is null and expires_at > now()'

interface LiveRow { id: number, user_id: number, expires_at: number, issued_at: number }
type StartRow = LiveRow & { superseded: number[] }
const sessionOf = (row: LiveRow): LiveSession => ({ id: row.id, userId: row.user_id, expiresAt: row.expires_at })

/**
 * The statements of a login's session and of a refresh, prepared: both are hot paths, and
 * planning the refresh's statement cost PostgreSQL more than running it. Digests are given in hex.
 */
function sessionStatements (database: Database) {
  const { knex } = database
  return {
    count: prepare<[windowSeconds: number, ipKey: string, hash: string], AttemptCount>(
      database, 'sessions.count-refresh',
      (windowSeconds, ipKey, hash) => countAttempt(knex, windowSeconds, ipKey,
        knex.raw('(select \'refresh:session:\' || session_id from refresh_tokens where hash = decode(?, \'hex\'))', [hash]))),
    // db/migrations/20261202000000_start_session.ts, as 20261203000000_session_cap_once.ts
    // rewrote it and 20261216000000_start_session_without_factor.ts guards it: the user locked,
    // the session, its first refresh token, the oldest past the cap ended. The columns are what
    // audit entries riding in the statement name (the routes' login).
    start: prepare<[userId: number, passwordHash: string, maxAgeSeconds: number, userAgent: string | null, ip: string, hash: string, refreshTtlSeconds: number, keep: number, withoutFactor: boolean], StartRow>(
      database, 'sessions.start', (userId, passwordHash, maxAgeSeconds, userAgent, ip, hash, refreshTtlSeconds, keep, withoutFactor) => knex.raw(`
        select s.id::float8 as id, s.user_id, floor(extract(epoch from s.expires_at))::float8 as expires_at,
          floor(extract(epoch from now()))::float8 as issued_at, s.superseded::float8[] as superseded
        from start_session(?, ?, ?, ?, ?, decode(?, 'hex'), ?, ?, ?) s`,
      [userId, passwordHash, maxAgeSeconds, userAgent, ip, hash, refreshTtlSeconds, keep, withoutFactor])),
    // The session by its key, from a subquery of the spent token: joined to the spent row
    // instead, the planner may start from the users (a CTE's row count is unknown to it, and
    // a table's is stale until analyzed) and scan every live session for the one.
    spend: prepare<[hash: string, successorHash: string, refreshTtlSeconds: number], LiveRow>(
      database, 'sessions.refresh', (hash, successorHash, refreshTtlSeconds) => knex.raw(`
        with spent as (
          update refresh_tokens set spent_at = now()
          where hash = decode(?, 'hex') and spent_at is null and expires_at > now()
          returning session_id),
        live as (
          select s.id, s.user_id, s.expires_at
          from sessions s join users u on u.id = s.user_id
          where s.id = (select session_id from spent) and s.ended_at is null and s.expires_at > now() and u.deleted_at is null),
        successor as (
          insert into refresh_tokens (hash, session_id, issued_at, expires_at)
          select decode(?, 'hex'), id, now(), least(now() + make_interval(secs => ?), expires_at) from live),
        used as (update sessions s set last_used_at = now() from live where s.id = live.id)
        select id::float8 as id, user_id, floor(extract(epoch from expires_at))::float8 as expires_at,
          floor(extract(epoch from now()))::float8 as issued_at
        from live`, [hash, successorHash, refreshTtlSeconds]))
  }
}

/**
 * What nothing shows or needs any longer: sessions ended or expired a day ago or more (their
 * refresh tokens go with them), and refresh tokens of live sessions expired as long ago (one
 * presented again gets 401 as unknown, not the end of its session: it could not refresh anyway).
 */
const SWEEP_SESSIONS = 'delete from sessions where ended_at < now() - interval \'1 day\' or expires_at < now() - interval \'1 day\''
const SWEEP_REFRESH_TOKENS = 'delete from refresh_tokens where expires_at < now() - interval \'1 day\''

/** Ends the sessions the query finds, at once on this instance, on the others by notification. */
export async function endSessions (trx: Knex, cache: CallerCache, where: (qb: Knex.QueryBuilder) => Knex.QueryBuilder, reason: EndReason): Promise<EndedSession[]> {
  const ended: EndedSession[] = await where(trx('sessions').whereNull('ended_at'))
    .update({ ended_at: trx.fn.now(), end_reason: reason })
    .returning(trx.raw(`${SESSION_COLUMNS}, user_id`))
  cache.afterCommit(trx, callers => { for (const session of ended) callers.forgetSession(session.id) })
  return ended
}

function createSessionsRepository (database: Database, cache: CallerCache, settings: { refreshTtlSeconds: number, sessionMaxAgeSeconds: number, refreshReuseGraceSeconds: number }) {
  const { knex } = database
  const { refreshTtlSeconds, sessionMaxAgeSeconds, refreshReuseGraceSeconds } = settings
  const statements = sessionStatements(database)

  const end = (trx: Knex, where: (qb: Knex.QueryBuilder) => Knex.QueryBuilder, reason: EndReason) => endSessions(trx, cache, where, reason)

  return {
    /**
     * Starts a session of the user, with its first refresh token, and ends their oldest live
     * sessions past SESSIONS_PER_USER (`superseded`: their ids), in one statement (in `db`'s
     * transaction, or on its own with `cteWrites` riding in it: a login's audit entries). The
     * user is locked first, so that logins of one user at once (a fleet of clients sharing an
     * account) take their turns, each seeing the sessions the ones before it started: the cap
     * holds at every moment. None, if the user has since been deleted or their password is no
     * longer `passwordHash`, the hash the login matched; nor, `withoutFactor`, if the user has
     * confirmed a second factor since the login found none.
     */
    async start (db: Knex, userId: number, passwordHash: string, client: { userAgent: string | undefined, ip: string }, cteWrites: CteWrite[] = [], withoutFactor = false): Promise<StartedSession | undefined> {
      const refreshToken = newRefreshToken()
      const args: Parameters<typeof statements.start>[0] = [userId, passwordHash, sessionMaxAgeSeconds, client.userAgent?.slice(0, 512) ?? null, client.ip.slice(0, 64),
        refreshHash(refreshToken).toString('hex'), refreshTtlSeconds, SESSIONS_PER_USER - 1, withoutFactor]
      /* c8 ignore next -- a caller's mistake */
      if (cteWrites.length > 0 && db.isTransaction) throw new Error('A statement\'s CTE writes ride only in a statement of its own, not in a transaction')
      // No row: the user deleted, or their password changed, since the login's check.
      const row: StartRow | undefined = cteWrites.length > 0
        ? await insert({ ...insertion(statements.start, args), cteWrites })
        : (await statements.start(args, db)).rows[0]
      if (row === undefined) return undefined
      cache.afterCommit(db, callers => { for (const id of row.superseded) callers.forgetSession(id) })
      return { session: sessionOf(row), refreshToken, issuedAt: row.issued_at, superseded: row.superseded }
    },

    /**
     * Counts a refresh under the client's IP and under the session of the token presented (if
     * it names one), as login counts under IP and e-mail address.
     */
    async countRefresh (windowSeconds: number, ipKey: string, token: string): Promise<AttemptCount[]> {
      const { rows } = await statements.count([windowSeconds, ipKey, refreshHash(token).toString('hex')])
      return rows
    },

    /**
     * Spends a refresh token and keeps its successor (whose digest the caller gives), in one
     * statement; or tells what else the token is. A token spent within the grace is answered
     * as it was (`repeated`); spent before that, it is a reuse (`reused`), whose session the
     * caller ends (`endReused`).
     */
    async refresh (token: string, successor: string): Promise<Refresh> {
      const hash = refreshHash(token)
      const { rows: [spent] } = await statements.spend([hash.toString('hex'), refreshHash(successor).toString('hex'), refreshTtlSeconds])
      if (spent) return { outcome: 'spent', session: sessionOf(spent), issuedAt: spent.issued_at }

      // Not spent now: unknown, expired, of an ended session, or spent before (by a request
      // that may have just committed: this statement sees it).
      const { rows: [known] } = await knex.raw<{ rows: (LiveRow & { spent: boolean, within_grace: boolean, session_live: boolean })[] }>(`
        select s.id::float8 as id, s.user_id, floor(extract(epoch from s.expires_at))::float8 as expires_at,
          floor(extract(epoch from t.spent_at))::float8 as issued_at,
          t.spent_at is not null as spent,
          coalesce(now() - t.spent_at <= make_interval(secs => ?), false) as within_grace,
          s.ended_at is null and s.expires_at > now() and u.deleted_at is null as session_live
        from refresh_tokens t join sessions s on s.id = t.session_id join users u on u.id = s.user_id
        where t.hash = ?`, [refreshReuseGraceSeconds, hash])
      if (!known) return { outcome: 'unknown' }
      if (!known.session_live) return { outcome: 'ended' }
      if (!known.spent) return { outcome: 'expired' }
      if (known.within_grace) return { outcome: 'repeated', session: sessionOf(known), issuedAt: known.issued_at }
      return { outcome: 'reused', sessionId: known.id }
    },

    /**
     * The session of the token, if it is one spent past its grace, which is to end
     * (`endReused`). A refresh held back by a limit still looks: else whoever holds a stolen
     * session's live token could keep the limit reached, and the victim's spent token would get
     * 429, never ending the session.
     */
    async reusedSession (token: string): Promise<number | undefined> {
      const { rows: [reused] } = await knex.raw<{ rows: { id: number }[] }>(`
        select session_id::float8 as id from refresh_tokens
        where hash = ? and spent_at is not null and now() - spent_at > make_interval(secs => ?)`, [refreshHash(token), refreshReuseGraceSeconds])
      return reused?.id
    },

    /**
     * Ends the session a refresh token spent again is of, in `trx`: the session as it was, or
     * none if it had ended already (by another request since the token's look-up, or an
     * earlier reuse).
     */
    async endReused (sessionId: number, trx: Knex): Promise<EndedSession | undefined> {
      const [ended] = await end(trx, qb => qb.where('id', sessionId), 'refresh token reused')
      return ended
    },

    /** The user's live sessions, the most recently used first. */
    async list (userId: number): Promise<SessionRecord[]> {
      return knex('sessions').select(knex.raw(SESSION_COLUMNS)).where('user_id', userId)
        .whereRaw(LIVE).orderBy([{ column: 'last_used_at', order: 'desc' }, { column: 'id', order: 'desc' }])
    },

    /**
     * The user's session, if live, locked until `trx` ends as its end's UPDATE locks it (FOR NO
     * KEY UPDATE: a refresh still adds its next token meanwhile). Another user's is neither
     * found nor locked: waiting on its lock would tell it exists.
     */
    async lockOwn (userId: number, sessionId: number, trx: Knex): Promise<(SessionRecord & { user_id: number }) | undefined> {
      if (!Number.isSafeInteger(sessionId)) return undefined
      return trx('sessions').first(trx.raw(`${SESSION_COLUMNS}, user_id`)).where({ id: sessionId, user_id: userId }).whereRaw(LIVE).forNoKeyUpdate()
    },

    /**
     * Ends this session of the user's, if it is one and live: the session as it was, or
     * undefined. Its id is a token's or one `lockOwn` found: a safe integer.
     */
    async endOne (userId: number, sessionId: number, reason: EndReason, trx: Knex): Promise<EndedSession | undefined> {
      const [ended] = await end(trx, qb => qb.where({ id: sessionId, user_id: userId }).whereRaw('expires_at > now()'), reason)
      return ended
    },

    /**
     * Notes that the user's session, if live, was reauthenticated now: the time its word stands
     * until (an ISO timestamp), or undefined for a session ended or expired meanwhile.
     */
    async reauthenticated (userId: number, sessionId: number, trx: Knex): Promise<string | undefined> {
      const [row] = await trx('sessions').where({ id: sessionId, user_id: userId }).whereRaw(LIVE)
        .update({ reauthenticated_at: trx.fn.now(), reauthentication_failures: 0 })
        .returning(trx.raw('reauthenticated_at + make_interval(secs => ?) as until', [REAUTHENTICATION_SECONDS])) as Array<{ until: string }>
      return row?.until
    },

    /**
     * Counts a wrong code or passkey tried to reauthenticate the user's session; the
     * REAUTHENTICATION_FAILURES-th ends it: the session ended, if it did.
     */
    async failedReauthentication (userId: number, sessionId: number, trx: Knex): Promise<EndedSession | undefined> {
      const [row] = await trx('sessions').where({ id: sessionId, user_id: userId }).whereRaw(LIVE)
        .increment('reauthentication_failures', 1).returning('reauthentication_failures') as Array<{ reauthentication_failures: number }>
      if (row === undefined || row.reauthentication_failures < REAUTHENTICATION_FAILURES) return undefined
      return (await end(trx, qb => qb.where({ id: sessionId, user_id: userId }), 'reauthentication failed'))[0]
    },

    /** Deletes what is past (SWEEP_SESSIONS, SWEEP_REFRESH_TOKENS); a failure is only logged. */
    async sweep (log: FastifyBaseLogger): Promise<void> {
      try {
        await knex.raw(SWEEP_SESSIONS)
        await knex.raw(SWEEP_REFRESH_TOKENS)
      /* c8 ignore next 3 -- a database out of reach at the minute of a sweep; the next one catches up */
      } catch (error) {
        log.warn({ err: error }, 'could not sweep the past sessions')
      }
    }
  }
}

/** Data access for sessions and their refresh tokens, and the sweep of what is past. */
export const sessionsRepository = oncePerDatabase(createSessionsRepository)
