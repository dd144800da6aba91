import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import fastifyJwt from '@fastify/jwt'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { MAX_ID } from '../../lib/http/limits.js'
import { CodedError, type ErrorCode } from '../../lib/http/error-codes.js'
import { VerifiedTokens } from '../../lib/auth/verified-tokens.js'
import { API_KEY_PATTERN, apiKeyHash } from '../../lib/auth/api-keys.js'
import { callerQueries } from '../../lib/auth/caller-queries.js'
import { keyPolicy, userPolicy, type RatePolicy } from '../../lib/limits/rate-policy.js'

/** The caller of a request that passed `fastify.authenticate`. */
export interface Caller {
  id: number
  jti: string
  /** The session the token is of; none for a token issued before sessions were, or for a key. */
  sessionId: number | undefined
  /** The API key the caller authenticated with, if not a token. */
  keyId: number | undefined
  /** Expiry of the presented token, seconds since the epoch. */
  exp: number
  permissions: Set<string>
  /** The user's rate limit and quota (plugins/app/rate-limits.ts). */
  policy: RatePolicy
  /** The API key's own policy, spent beside the user's. */
  keyPolicy: RatePolicy | undefined
}

/** What an access token of a session is made of: whose it is, and until when the session holds. */
export interface LiveSession {
  id: number
  userId: number
  /** The session's end at the latest, seconds since the epoch. */
  expiresAt: number
}

interface TokenClaims {
  sub: string
  jti: string
  /**
   * A token of no session (issued before sessions were): the user's token generation when it
   * was issued, which logging out everywhere moves on. Session tokens of earlier releases carry
   * it too, unread: their session is what holds.
   */
  gen?: number
  /** The session's id (routes/api/(authenticated)/sessions/repository.ts). */
  sid?: number
  iat: number
  exp: number
}

declare module '@fastify/jwt' {
  interface FastifyJWT {
    payload: Pick<TokenClaims, 'sub' | 'jti' | 'gen' | 'sid'> & { iat?: number }
    user: Caller
  }
}

/** What a login, a register and a refresh answer beside `success`: the session's tokens. */
export interface SessionTokens {
  /** The access token: a bearer JWT. */
  data: string
  refresh_token: string
  /** The access token's lifetime in seconds. */
  expires_in: number
  token_type: 'Bearer'
}

declare module 'fastify' {
  interface FastifyInstance {
    /** onRequest hook: a valid bearer token of an existing user, not logged out, or 401. */
    authenticate: (request: FastifyRequest, reply: FastifyReply) => Promise<void>
    /** onRequest hook: the caller authenticated with a token, not an API key, or 403 (keys make no keys and manage no sessions). */
    refuseKeys: (request: FastifyRequest) => Promise<void>
    /** Route hook factory (onRequest, before the body is read): the caller holds `permission`, or 403. */
    can: (permission: string) => (request: FastifyRequest) => Promise<void>
    /**
     * An access token of the session, issued at `issuedAt` (seconds since the epoch), beside
     * its refresh token. The same arguments make the same token: a refresh repeated within
     * its grace is answered as it was.
     */
    sessionTokens: (session: LiveSession, refreshToken: string, issuedAt: number, jti?: string) => SessionTokens
  }
}

export const ISSUER = 'student-records-api'
export const AUDIENCE = 'student-records-api'
const BEARER = /^Bearer +([A-Za-z0-9\-_]+\.[A-Za-z0-9\-_]+\.[A-Za-z0-9\-_]*) *$/i
const KEY_BEARER = new RegExp(`^Bearer +(${API_KEY_PATTERN}) *$`, 'i')
/** The claims exactly as `issueToken` writes them: a user id in plain decimal, a version 4 UUID. */
const USER_ID = /^[1-9]\d{0,9}$/
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

/**
 * What a token of a user who must enrol a second factor still serves: the enrolment, the
 * profile to read, the logout.
 */
function servesEnrolment (request: FastifyRequest): boolean {
  // A route's: the hook runs on routes only.
  const url = String(request.routeOptions.url)
  return url.startsWith('/api/profile/mfa') || url === '/api/profile/reauthenticate' || url === '/api/logout' || (url === '/api/profile' && request.method === 'GET')
}

/** Whether the claims are of the forms the service signs; anything else, even validly signed, is refused. */
function wellFormed (claims: TokenClaims): boolean {
  return typeof claims.sub === 'string' && USER_ID.test(claims.sub) && Number(claims.sub) <= MAX_ID &&
    typeof claims.jti === 'string' && UUID.test(claims.jti) &&
    (claims.gen === undefined || (Number.isSafeInteger(claims.gen) && claims.gen >= 0)) &&
    (claims.sid === undefined ? claims.gen !== undefined : Number.isSafeInteger(claims.sid) && claims.sid > 0)
}

/**
 * Bearer tokens: HS256 JWTs with sub, jti, iat, exp, iss and aud all required. A token's
 * first request looks its caller up in one query; later ones find it in the caller cache,
 * which every logout, deletion and change of roles or permissions empties of what it
 * touches (see plugins/app/caller-cache.ts), so that the change takes effect on the next request.
 */
export default fp(async (fastify) => {
  const { jwtSecret, jwtTtlSeconds, cacheSize } = fastify.config.auth

  await fastify.register(fastifyJwt, {
    secret: jwtSecret,
    // @fastify/jwt reads a number as seconds.
    sign: { algorithm: 'HS256', iss: ISSUER, aud: AUDIENCE, expiresIn: jwtTtlSeconds },
    verify: {
      algorithms: ['HS256'],
      allowedIss: ISSUER,
      allowedAud: AUDIENCE,
      requiredClaims: ['sub', 'jti', 'iat', 'exp', 'iss', 'aud']
    }
  })
  const verifiedTokens = new VerifiedTokens<TokenClaims>(cacheSize)
  const queries = callerQueries(fastify.database, cacheSize)

  const unauthorized = (reply: FastifyReply, message: string, code: ErrorCode = 'invalid_token') => {
    reply.header('www-authenticate', 'Bearer realm="api"')
    return new CodedError(code, message)
  }

  fastify.decorate('sessionTokens', (session: LiveSession, refreshToken: string, issuedAt: number, jti: string = randomUUID()): SessionTokens => {
    // No access token outlives its session.
    const lifetime = Math.min(jwtTtlSeconds, session.expiresAt - issuedAt)
    const claims = { sub: String(session.userId), jti, sid: session.id, iat: issuedAt }
    const token = lifetime === jwtTtlSeconds ? fastify.jwt.sign(claims) : fastify.jwt.sign(claims, { expiresIn: Math.max(1, lifetime) })
    return { data: token, refresh_token: refreshToken, expires_in: Math.max(1, lifetime), token_type: 'Bearer' }
  })

  // MFA_REQUIRED_ROLES, as role names are matched: whatever their case.
  const factorRoles = new Set(fastify.config.auth.mfaRequiredRoles.map(role => role.toLowerCase()))
  /** A caller holding a role that requires a second factor, without one. */
  const needsFactor = (found: { mfa: boolean, roles: Array<{ name: string }> }) =>
    factorRoles.size > 0 && !found.mfa && found.roles.some(role => factorRoles.has(role.name.toLowerCase()))
  // A name no role has (a typo, or a role not made yet) requires nothing: said at start (by
  // each worker). Only a warning: a failure to look is logged, and the start goes on.
  if (factorRoles.size > 0) {
    fastify.addHook('onReady', async () => {
      try {
        const rows: Array<{ name: string }> = await fastify.knex('roles').whereRaw('lower(name) = any(?)', [[...factorRoles]]).select(fastify.knex.raw('lower(name) as name'))
        const known = new Set(rows.map(row => row.name))
        const unknown = fastify.config.auth.mfaRequiredRoles.filter(role => !known.has(role.toLowerCase()))
        if (unknown.length > 0) fastify.log.warn({ roles: unknown }, 'MFA_REQUIRED_ROLES names roles that do not exist: they require nothing until one of that name is made')
      /* c8 ignore next 3 -- the database lost between the migrations and this look */
      } catch (error) {
        fastify.log.warn({ err: error }, 'could not check MFA_REQUIRED_ROLES\' roles')
      }
    })
  }
  const enrolmentRequired = () => new CodedError('mfa_enrolment_required', 'A role of this account requires a second factor: enrol an authenticator app first (POST /api/profile/mfa/totp)')

  /**
   * An API key's caller: found in the caller cache under its digest, or in the database. A key
   * that expires while cached is refused by the cache's entry itself.
   */
  async function authenticateKey (request: FastifyRequest, reply: FastifyReply, secret: string) {
    const cache = fastify.callerCache
    const cacheKey = `key:${apiKeyHash(secret)}`
    let caller = cache.get(cacheKey)
    if (caller === undefined) {
      fastify.rateLimits.holdRefused(request, reply)
      const version = cache.version
      const key = await queries.keyCaller(secret)
      if (key === undefined) throw unauthorized(reply, 'The API key is invalid, revoked or expired')
      caller = {
        userId: key.user_id,
        keyId: key.id,
        keyExpiresAt: key.expires_at,
        permissions: new Set(key.permissions),
        policy: userPolicy(fastify.rateLimits.policy, key.roles),
        keyPolicy: keyPolicy(key),
        enrolmentOnly: needsFactor(key)
      }
      cache.set(cacheKey, caller, version)
    } else if ((caller.keyExpiresAt ?? Infinity) * 1000 <= Date.now()) {
      throw unauthorized(reply, 'The API key is invalid, revoked or expired')
    }
    queries.noteKeyUse(caller.keyId!)?.catch((error: unknown) => request.log.warn({ err: error }, 'could not note the API key\'s last use'))
    request.user = {
      id: caller.userId,
      jti: cacheKey,
      sessionId: undefined,
      keyId: caller.keyId,
      exp: caller.keyExpiresAt ?? Number.MAX_SAFE_INTEGER,
      permissions: caller.permissions,
      policy: caller.policy,
      keyPolicy: caller.keyPolicy
    }
    // A key cannot enrol a factor: it serves nothing until its owner has one.
    if (caller.enrolmentOnly) throw enrolmentRequired()
  }

  fastify.decorate('authenticate', async (request: FastifyRequest, reply: FastifyReply) => {
    const authorization = request.headers.authorization ?? ''
    const key = KEY_BEARER.exec(authorization)?.[1]
    if (key !== undefined) return authenticateKey(request, reply, key)
    const token = BEARER.exec(authorization)?.[1]
    if (!token) throw unauthorized(reply, 'A bearer token or API key is required', 'unauthenticated')

    let claims: TokenClaims
    try {
      claims = verifiedTokens.claims(token, text => fastify.jwt.verify<TokenClaims>(text))
    } catch (error) {
      // fast-jwt checks the signature first: only a token of this service is told expired.
      throw unauthorized(reply, 'The token is invalid or has expired', (error as { code?: string }).code === 'FAST_JWT_EXPIRED' ? 'token_expired' : 'invalid_token')
    }
    if (!wellFormed(claims)) throw unauthorized(reply, 'The token is invalid or has expired')
    const id = Number(claims.sub)

    const cache = fastify.callerCache
    let caller = cache.get(claims.jti)
    if (caller?.userId !== id) {
      const version = cache.version
      const found = await queries.tokenCaller(id, claims.gen, claims.jti, claims.sid)
      if (found === undefined) throw unauthorized(reply, 'The token is no longer valid')
      caller = { userId: id, sessionId: claims.sid, permissions: new Set(found.permissions), policy: userPolicy(fastify.rateLimits.policy, found.roles), enrolmentOnly: needsFactor(found) }
      cache.set(claims.jti, caller, version)
    }
    if (claims.sid !== undefined) {
      queries.noteSessionUse(claims.sid)?.catch((error: unknown) => request.log.warn({ err: error }, 'could not note the session\'s last use'))
    }

    request.user = { id, jti: claims.jti, sessionId: claims.sid, keyId: undefined, exp: claims.exp, permissions: caller.permissions, policy: caller.policy, keyPolicy: undefined }
    if (caller.enrolmentOnly && !servesEnrolment(request)) throw enrolmentRequired()
  })

  fastify.decorate('refuseKeys', async (request: FastifyRequest) => {
    if (request.user.keyId !== undefined) throw new CodedError('access_token_required', 'An API key cannot manage API keys, sessions or the profile: use an access token')
  })

  fastify.decorate('can', (permission: string) => async (request: FastifyRequest) => {
    if (!request.user.permissions.has(permission)) {
      throw fastify.httpErrors.forbidden(`This action needs the ${permission} permission`)
    }
  })
}, { name: 'auth', dependencies: ['config', 'knex', 'sensible', 'caller-cache', 'rate-limits'] })
