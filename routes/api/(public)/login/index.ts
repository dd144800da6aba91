import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { credentialQueries } from '../../../../lib/auth/credential-queries.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import { InvalidFields } from '../../../../lib/http/invalid-fields.js'
import type { Change } from '../../../../plugins/app/audit.js'
import { mfaRepository } from '../../(authenticated)/profile/mfa/repository.js'
import { sessionsRepository, type StartedSession } from '../../(authenticated)/sessions/repository.js'
import { loginSchemas } from './schema.js'

/** A token and a code: small. */
const BODY_LIMIT = 4 * 1024

/** How a second step of a login came out. */
type Outcome = { started: StartedSession } | { refused: 'token' | 'code' }

/**
 * `/api/login/mfa`: the second step of a login of an account with an authenticator app
 * (README, "Second factors"). One transaction: the challenge and the code are spent, and the
 * session starts, together or not at all; a wrong code is counted against the challenge.
 */
const login: FastifyPluginAsyncTypebox = async (fastify) => {
  const factors = mfaRepository(fastify.database, fastify.callerCache)
  const credentials = credentialQueries(fastify.database)
  const sessions = sessionsRepository(fastify.database, fastify.callerCache, fastify.config.auth)

  // Counted per client IP before anything else, a malformed body too: with the login's own
  // count per address and each challenge's 5 codes, codes cannot be tried by the million.
  fastify.post('/mfa', { schema: loginSchemas.mfa, bodyLimit: BODY_LIMIT, preValidation: fastify.throttle('login-mfa') }, async (request, reply) => {
    const { mfa_token: token, code, recovery_code: recoveryCode } = request.body
    if ((code === undefined) === (recoveryCode === undefined)) {
      throw new InvalidFields({ body: ['must have one of code and recovery_code, not both'] })
    }
    const factor = code === undefined ? 'recovery_code' : 'totp'
    const outcome = await request.recordEvents<Outcome>(async trx => {
      const challenge = await factors.findChallenge(token, trx)
      if (challenge === undefined) return { result: { refused: 'token' }, events: [] }
      const userId = challenge.user_id
      // The user's row first, as every change of a user locks it (a factor turned off meanwhile
      // waits, or is waited for); then the challenge, again, under its lock.
      const password = await credentials.lockedPassword(userId, trx)
      const locked = await factors.lockChallenge(token, trx)
      if (locked === undefined) return { result: { refused: 'token' }, events: [] }
      if (password !== locked.password_hash) {
        // The password changed (or the user went) since the login: it no longer stands.
        await factors.spendChallenge(token, trx)
        return { result: { refused: 'token' }, events: [] }
      }
      const check = code === undefined ? await factors.useRecoveryCode(userId, recoveryCode!, trx) : await factors.checkTotp(userId, code, trx)
      if (check !== 'accepted') {
        await factors.failChallenge(token, trx)
        return { result: { refused: 'code' }, events: [{ action: 'login-failed', resource: 'session', id: null, after: { user_id: userId, factor }, actor: { id: null } }] }
      }
      await factors.spendChallenge(token, trx)
      const started = (await sessions.start(trx, userId, password, { userAgent: request.headers['user-agent'], ip: request.ip }))!
      const actor = { id: userId, sessionId: started.session.id }
      const events: Change[] = [
        { action: 'login', resource: 'session', id: started.session.id, after: { user_id: userId, ip: request.ip, user_agent: request.headers['user-agent'], factor }, actor },
        ...started.superseded.map((id): Change => ({ action: 'end', resource: 'session', id, after: { user_id: userId, end_reason: 'superseded' }, actor }))
      ]
      return { result: { started }, events }
    })
    if ('refused' in outcome) {
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw outcome.refused === 'token'
        ? new CodedError('invalid_mfa_token', 'The login is unknown, expired, spent, or the password changed since: log in again')
        : new CodedError('invalid_mfa_code', factor === 'totp' ? 'The code does not match the authenticator app\'s, or was used before' : 'The recovery code does not match one of the account\'s, or was used before')
    }
    const { started } = outcome
    return { success: true as const, ...fastify.sessionTokens(started.session, started.refreshToken, started.issuedAt) }
  })
}

export default login
