import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { credentialQueries } from '../../../../lib/auth/credential-queries.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import type { Change } from '../../../../plugins/app/audit.js'
import { mfaRepository } from '../../(authenticated)/profile/mfa/repository.js'
import { sessionClient, sessionsRepository, type StartedSession } from '../../(authenticated)/sessions/repository.js'
import { passkeysRepository } from '../../(authenticated)/profile/passkeys/repository.js'
import { authenticatedCounter, authenticationOptions } from '../../../../lib/auth/passkeys.js'
import type { AuthenticationResponseJSON } from '@simplewebauthn/server'
import { loginSchemas } from './schema.js'

/** A token and a code: small. */
const BODY_LIMIT = 4 * 1024

/** A passkey's answer: its signature and the data it signs, a few KiB. */
const PASSKEY_BODY_LIMIT = 32 * 1024

/** How a second step of a login came out. */
type Outcome = { started: StartedSession } | { refused: 'token' | 'code' } | { locked: number }

/** How a login with a passkey came out. */
type PasskeyOutcome = { started: StartedSession } | { refused: 'token' | 'passkey' | 'unverified' }

/**
 * `/api/login/mfa`: the second step of a login of an account with an authenticator app
 * (README, "Second factors"). One transaction: the challenge and the code are spent, and the
 * session starts, together or not at all; a wrong code is counted against the challenge.
 * `/api/login/passkey`: a login with a passkey instead of a password (README, "Passkeys"); its
 * ceremony's challenge is spent by the first answer, whatever it comes to.
 */
const login: FastifyPluginAsyncTypebox = async (fastify) => {
  const factors = mfaRepository(fastify.database, fastify.callerCache)
  const credentials = credentialQueries(fastify.database)
  const sessions = sessionsRepository(fastify.database, fastify.callerCache, fastify.config.auth)
  const passkeys = passkeysRepository(fastify.database)
  const settings = fastify.config.auth.passkeys
  /** The audit entries of a session started: its login, by `factor`, and the sessions it ended past the cap. */
  const started = (request: FastifyRequest, userId: number, session: StartedSession, factor: string): Change[] => {
    const actor = { id: userId, sessionId: session.session.id }
    return [
      { action: 'login', resource: 'session', id: session.session.id, after: { user_id: userId, ip: request.ip, user_agent: request.headers['user-agent'], factor }, actor },
      ...session.superseded.map((id): Change => ({ action: 'end', resource: 'session', id, after: { user_id: userId, end_reason: 'superseded' }, actor }))
    ]
  }

  // Counted per client IP before anything else, a malformed body too: with the login's own
  // count per address and each challenge's 5 codes, codes cannot be tried by the million.
  fastify.post('/mfa', { schema: loginSchemas.mfa, bodyLimit: BODY_LIMIT, preValidation: fastify.throttle('login-mfa') }, async (request, reply) => {
    const body = request.body
    const token = body.mfa_token
    const code = 'code' in body ? body.code : undefined
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
      if (password === undefined || !factors.passwordUnchangedSince(locked, password)) {
        // The password changed (or the user went) since the login: it no longer stands.
        await factors.spendChallenge(token, trx)
        return { result: { refused: 'token' }, events: [] }
      }
      const checked = 'recovery_code' in body ? await factors.useRecoveryCode(userId, body.recovery_code, trx) : await factors.checkTotp(userId, body.code, trx)
      // Not counted against the challenge: the owner may still use it, or a recovery code.
      if (checked.check === 'locked') return { result: { locked: checked.retryAfter }, events: [] }
      if (checked.check !== 'accepted') {
        await factors.failChallenge(token, trx)
        return { result: { refused: 'code' }, events: [{ action: 'login-failed', resource: 'session', id: null, after: { user_id: userId, factor }, actor: { id: null } }] }
      }
      await factors.spendChallenge(token, trx)
      const session = (await sessions.start(trx, userId, password, sessionClient(request)))!
      return { result: { started: session }, events: started(request, userId, session, factor) }
    })
    if ('locked' in outcome) {
      reply.header('retry-after', String(outcome.locked))
      throw fastify.httpErrors.tooManyRequests(`Too many wrong codes in a row: the authenticator app's codes are refused for ${Math.ceil(outcome.locked / 60)} minutes more; a recovery code works`)
    }
    if ('refused' in outcome) {
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw outcome.refused === 'token'
        ? new CodedError('invalid_mfa_token', 'The login is unknown, expired, spent, or the password changed since: log in again')
        : new CodedError('invalid_mfa_code', factor === 'totp' ? 'The code does not match the authenticator app\'s, or was used before' : 'The recovery code does not match one of the account\'s, or was used before')
    }
    const { started: session } = outcome
    return { success: true as const, ...fastify.sessionTokens(session.session, session.refreshToken, session.issuedAt) }
  })

  // Counted per client IP, as the answer is: each options asked keeps a challenge for 5 minutes.
  fastify.post('/passkey/options', { schema: loginSchemas.passkeyOptions, preValidation: fastify.throttle('login-passkey') }, async (request) => {
    const options = await authenticationOptions(settings)
    const token = await request.recordEvents(async trx => ({ result: await passkeys.issueChallenge(null, options.challenge, trx), events: [] }))
    return { success: true as const, data: options, passkey_token: token }
  })

  fastify.post('/passkey', { schema: loginSchemas.passkey, bodyLimit: PASSKEY_BODY_LIMIT, preValidation: fastify.throttle('login-passkey') }, async (request, reply) => {
    const { passkey_token: token, credential } = request.body
    const outcome = await request.recordEvents<PasskeyOutcome>(async trx => {
      const challenge = await passkeys.takeChallenge(token, null, trx)
      if (challenge === undefined) return { result: { refused: 'token' }, events: [] }
      const failed = (userId: number | null): { result: PasskeyOutcome, events: Change[] } =>
        ({ result: { refused: 'passkey' }, events: [{ action: 'login-failed', resource: 'session', id: null, after: { user_id: userId, factor: 'passkey' }, actor: { id: null } }] })
      // Whose, then the user's row locked before the passkey's, as a removal of it locks them.
      const owner = await passkeys.findOwner(credential.id, trx)
      if (owner === undefined) return failed(null)
      const user = await credentials.lockedCredentials(owner, trx)
      const passkey = await passkeys.lockByCredential(credential.id, trx)
      /* c8 ignore next -- the user deleted, or the passkey removed, since its look-up */
      if (user === undefined || passkey?.userId !== owner) return failed(owner)
      const counter = await authenticatedCounter(settings, credential as AuthenticationResponseJSON, challenge, passkey)
      if (counter === undefined) return failed(owner)
      // Told only to whoever holds the passkey, as a login tells whoever knows the password.
      if (fastify.config.auth.requireVerifiedEmail && !user.verified) return { result: { refused: 'unverified' }, events: [] }
      await passkeys.used(passkey.id, counter, trx)
      const session = (await sessions.start(trx, owner, user.password, sessionClient(request)))!
      return { result: { started: session }, events: started(request, owner, session, 'passkey') }
    })
    if ('refused' in outcome) {
      if (outcome.refused === 'token') throw new CodedError('invalid_passkey_token', 'The passkey ceremony is unknown, expired or spent: ask for new options')
      if (outcome.refused === 'unverified') throw new CodedError('email_unverified', 'Verify the account\'s e-mail address first: follow the link mailed to it, or ask for another with POST /api/email/resend')
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw new CodedError('invalid_passkey', 'The passkey is not registered here, or its answer does not verify')
    }
    const { started: session } = outcome
    return { success: true as const, ...fastify.sessionTokens(session.session, session.refreshToken, session.issuedAt) }
  })
}

export default login
