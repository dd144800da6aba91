import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { CreatedKind } from '../../../plugins/app/write-path.js'
import type { User } from '../(authenticated)/users/schema.js'
import { confirmedPassword } from '../../../lib/auth/passwords.js'
import { CodedError } from '../../../lib/http/error-codes.js'
import { accessTokenId, REFRESH_TOKEN, refreshSecret, successorOf } from '../../../lib/auth/refresh-tokens.js'
import { credentialQueries } from '../../../lib/auth/credential-queries.js'
import { rolesRepository } from '../(authenticated)/roles/repository.js'
import { sessionClient, sessionsRepository, type StartedSession } from '../(authenticated)/sessions/repository.js'
import { usersRepository } from '../(authenticated)/users/repository.js'
import type { VerificationMail } from '../../../plugins/app/address-verification.js'
import { mfaRepository, MFA_CHALLENGE_TTL_SECONDS } from '../(authenticated)/profile/mfa/repository.js'
import { authSchemas, authTag, MfaChallenge } from './schema.js'

/**
 * Bodies of these routes are small even with every field at its longest and escaped
 * (about 5 KiB); the limit leaves anonymous callers no room for more.
 */
const BODY_LIMIT = 8 * 1024

/** What a refresh token that gets no new pair is, as its 401 says. */
const REFUSED = {
  unknown: 'The refresh token is invalid or has expired',
  expired: 'The refresh token is invalid or has expired',
  ended: 'The session has ended',
  reused: 'The refresh token was spent before: its session has ended'
} as const

/** `/api/login`, `/api/register` and `/api/token/refresh`: the routes of /api open to callers without a token. */
const publicRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  // Met right after the students: logging in opens the rest.
  fastify.declareResource({ tag: authTag, order: 3, schemas: [MfaChallenge] })
  const users = usersRepository(fastify.database, fastify.callerCache)
  const sessions = sessionsRepository(fastify.database, fastify.callerCache, fastify.config.auth)
  const credentials = credentialQueries(fastify.database)
  const roleRepository = rolesRepository(fastify.database, fastify.callerCache)
  const factors = mfaRepository(fastify.database, fastify.callerCache)
  const successors = refreshSecret(fastify.config.auth.jwtSecret)
  // A user registering: created only. Its answer is the new session's tokens, not the user,
  // and carries no ETag (the user's is GET /api/users/:id's).
  const registered: CreatedKind<User> = { resource: 'user', tag: false }
  // Ends the session of a refresh token spent again, with its audit entry (whoever presented it
  // is unknown); nothing if it had ended already.
  const endReused = (request: FastifyRequest, sessionId: number) => request.recordEvents(async trx => {
    const ended = await sessions.endReused(sessionId, trx)
    /* c8 ignore next -- ended by another request since the token's look-up, or by an earlier reuse */
    if (!ended) return { result: undefined, events: [] }
    return { result: undefined, events: [{ action: 'refresh-reuse', resource: 'session', id: ended.id, after: { user_id: ended.user_id, end_reason: 'refresh token reused' } }] }
  })

  // Login counts its attempt in the statement that looks the user up (register, in a hook,
  // before validation): a malformed body, answered 400 without a hash, is not counted.
  fastify.post('/login', { schema: authSchemas.login, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { email, password } = request.body
    const attempt = fastify.attempt('login', request, email)
    const { counts, user } = await credentials.findCounting(email, attempt)
    attempt.check(reply, counts)
    // Hashes wait their turn, one per core; by then the request may have been answered
    // (HANDLER_TIMEOUT) or dropped. Hashing for nobody would make every later login wait
    // longer still under a flood of them.
    const matches = await fastify.passwords.verify(user?.password, password, () => reply.sent || request.socket.destroyed)
    if (matches === undefined) return // nothing to answer, nor anyone to answer it to
    const refused = async () => {
      // Alike for an unknown address and a wrong password, as the answer is.
      await request.auditFailedLogin(email, user?.id ?? null)
      reply.header('www-authenticate', 'Bearer realm="api"')
      return new CodedError('invalid_credentials', 'These credentials do not match our records')
    }
    if (!matches) throw await refused()
    // Told only to whoever knows the password: the answer names no unverified address to others.
    if (fastify.config.auth.requireVerifiedEmail && !user!.verified) {
      throw new CodedError('email_unverified', 'Verify the account\'s e-mail address first: follow the link mailed to it, or ask for another with POST /api/email/resend')
    }
    const { id, password: verified, mfa } = user!
    // The password matched; the session waits for the second factor (routes/api/(public)/login/).
    const challenge = async () => {
      const token = await request.recordEvents(async trx => ({
        result: await factors.issueChallenge(id, verified, trx),
        events: [{ action: 'mfa-challenge', resource: 'session', id: null, after: { user_id: id, ip: request.ip, user_agent: request.headers['user-agent'] }, actor: { id } }] as const
      }))
      return { success: true as const, mfa_required: true as const, mfa_token: token, expires_in: MFA_CHALLENGE_TTL_SECONDS, message: 'Send a code of the authenticator app (or a recovery code) with mfa_token to POST /api/login/mfa' }
    }
    if (mfa) return await challenge()
    // One statement: the session, the end of the oldest past the cap, and their audit entries;
    // none if the password changed, the user went, or a second factor was confirmed while the
    // hash was checked.
    const started = await request.recordStatementEvents([
      { action: 'login', resource: 'session', idColumn: 'id', after: { user_id: id, ip: request.ip, user_agent: request.headers['user-agent'] } },
      { action: 'end', resource: 'session', idColumn: 'superseded', each: true, after: { user_id: id, end_reason: 'superseded' } }
    ], { userId: id, sessionColumn: 'id' }, cteWrites => sessions.start(fastify.knex, id, verified, sessionClient(request), cteWrites, true))
    if (started === undefined) {
      // The factor confirmed meanwhile: the login waits for it, as it would have.
      const now = await credentials.find(email)
      if (now?.id === id && now.password === verified && now.mfa) return await challenge()
      throw await refused()
    }
    return { success: true as const, ...fastify.sessionTokens(started.session, started.refreshToken, started.issuedAt) }
  })

  fastify.post('/register', { schema: authSchemas.register, bodyLimit: BODY_LIMIT, preValidation: fastify.throttle('register') }, async (request, reply) => {
    const { name, email, password, c_password: confirmation } = request.body
    const passwordHash = await fastify.passwords.hash(confirmedPassword(password, confirmation))
    // With REQUIRE_VERIFIED_EMAIL, no session until the address is verified: a login then.
    const startSession = !fastify.config.auth.requireVerifiedEmail
    let userId: number | undefined
    let started: StartedSession | undefined
    let mail: VerificationMail | null = null
    // Who registers acts as themselves, in the session they start, if one.
    const actor = () => ({ id: userId!, sessionId: started?.session.id })
    const sent = await request.createRecord(reply, registered, async trx => {
      const roles = await roleRepository.findByNames(fastify.config.auth.registerRoles, trx)
      const user = await users.create({ name, email, passwordHash, roleIds: roles.map(role => role.id) }, trx)
      userId = user.id
      mail = await fastify.addressVerification.issue(trx, user.id, user.email, false)
      // The user made in this transaction: their session starts.
      if (startSession) started = (await sessions.start(trx, user.id, passwordHash, sessionClient(request)))!
      return user
    }, user => {
      const location = `/api/users/${user.id}`
      if (started === undefined) return { body: { success: true as const, message: 'Registered: follow the link mailed to the address to verify it, then log in' }, location }
      const tokens = fastify.sessionTokens(started.session, started.refreshToken, started.issuedAt)
      return { body: { success: true as const, ...tokens, message: 'Registered' }, location }
    }, { actor })
    // Once committed; a replay (Idempotency-Key) made no token and sends nothing.
    fastify.addressVerification.send(request, mail)
    return sent
  })

  // Counted per client IP and per session like a login, before anything else; a token spent
  // again within REFRESH_REUSE_GRACE gets the same pair, later it ends its session, even past
  // a limit. The count is a statement of its own: inside the refresh's, the counter's row lock
  // would be held until that statement's commit reached the disk, and each refresh from one IP
  // would wait for the one before (docs/performance.md).
  fastify.post('/token/refresh', { schema: authSchemas.refresh, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { refresh_token: token } = request.body
    const attempt = fastify.attempt('refresh', request, undefined)
    const counts = await sessions.countRefresh(attempt.windowSeconds, attempt.ipKey, token)
    try {
      attempt.check(reply, counts)
    } catch (limited) {
      // The look-up and the end under one guard: a time limit's 503 never falls between them.
      const reused = await request.guardWrite(async () => {
        const sessionId = await sessions.reusedSession(token)
        if (sessionId !== undefined) await endReused(request, sessionId)
        return sessionId !== undefined
      })
      if (!reused) throw limited
      reply.removeHeader('retry-after')
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw new CodedError('invalid_refresh_token', REFUSED.reused)
    }
    const refresh = REFRESH_TOKEN.test(token)
      ? await request.guardWrite(() => sessions.refresh(token, successorOf(token, successors)))
      : { outcome: 'unknown' as const }
    if (refresh.outcome === 'reused') await endReused(request, refresh.sessionId)
    if (refresh.outcome === 'spent' || refresh.outcome === 'repeated') {
      const successor = successorOf(token, successors)
      return { success: true as const, ...fastify.sessionTokens(refresh.session, successor, refresh.issuedAt, accessTokenId(successor)) }
    }
    reply.header('www-authenticate', 'Bearer realm="api"')
    throw new CodedError('invalid_refresh_token', REFUSED[refresh.outcome])
  })
}

export default publicRoutes
