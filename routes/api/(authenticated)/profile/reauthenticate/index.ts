import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { AuthenticationResponseJSON } from '@simplewebauthn/server'
import type { Knex } from 'knex'
import { credentialQueries, REAUTHENTICATION_SECONDS } from '../../../../../lib/auth/credential-queries.js'
import { authenticatedCounter } from '../../../../../lib/auth/passkeys.js'
import { CodedError } from '../../../../../lib/http/error-codes.js'
import type { Change } from '../../../../../plugins/app/audit.js'
import { REAUTHENTICATION_FAILURES, sessionsRepository } from '../../sessions/repository.js'
import { mfaRepository } from '../mfa/repository.js'
import { passkeysRepository } from '../passkeys/repository.js'
import { reauthenticateSchemas } from './schema.js'

/** A password or a code, or a passkey's answer: its signature and the data it signs, a few KiB. */
const BODY_LIMIT = 32 * 1024

/** Which proof a reauthentication took, as the audit log names factors. */
type Factor = 'password' | 'totp' | 'passkey'

/** How a proof came out: the session's new deadline, or why not (`ended`: the failure ended the session). */
type Outcome = { until: string } | { refused: 'session' | 'none' | 'token' } | { refused: 'code' | 'passkey', ended: boolean } | { locked: number }

/**
 * `/api/profile/reauthenticate`: the step-up (README, "Step-up"). The session proves again who
 * holds it, by the password, the authenticator app's code or a passkey; for 5 minutes its word
 * stands for the password where a sensitive change asks for it again
 * (plugins/app/password-check.ts). A proof and its session's mark commit together; a wrong
 * code is counted (against the app, as at login, and against the session, which the fifth
 * wrong code or passkey ends), and a passkey ceremony spent, whatever the answer.
 */
const reauthenticate: FastifyPluginAsyncTypebox = async (fastify) => {
  const factors = mfaRepository(fastify.database, fastify.callerCache)
  const credentials = credentialQueries(fastify.database)
  const sessions = sessionsRepository(fastify.database, fastify.callerCache, fastify.config.auth)
  const passkeys = passkeysRepository(fastify.database)
  const settings = fastify.config.auth.passkeys

  fastify.addHook('onRequest', fastify.refuseKeys)

  // Counted per client IP, a malformed body too; a password is counted with logins as well.
  fastify.post('/', { schema: reauthenticateSchemas.reauthenticate, bodyLimit: BODY_LIMIT, preValidation: fastify.throttle('reauthenticate') }, async (request, reply) => {
    const { id: userId, sessionId } = request.user
    if (sessionId === undefined) {
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw new CodedError('invalid_token', 'This access token belongs to no session: log in again to reauthenticate')
    }
    const body = request.body
    const factor: Factor = 'current_password' in body ? 'password' : 'code' in body ? 'totp' : 'passkey'
    const verified = 'current_password' in body ? await request.checkCurrentPassword(reply, body.current_password, 'is the proof') : null
    /* c8 ignore next -- a client gone, or answered 503, before its hash's turn (plugins/app/password-check.ts) */
    if (verified === undefined) return
    /** A wrong code or passkey: counted against the session, which the last one ends. */
    const failed = async (refused: 'code' | 'passkey', trx: Knex): Promise<{ result: Outcome, events: Change[] }> => {
      const ended = await sessions.failedReauthentication(userId, sessionId, trx)
      const events: Change[] = [{ action: 'login-failed', resource: 'session', id: sessionId, after: { user_id: userId, factor } }]
      if (ended !== undefined) events.push({ action: 'end', resource: 'session', id: sessionId, after: { user_id: userId, end_reason: 'reauthentication failed' } })
      return { result: { refused, ended: ended !== undefined }, events }
    }
    const outcome = await request.recordEvents<Outcome>(async trx => {
      // A passkey's ceremony is spent first, whatever the answer comes to.
      const challenge = 'passkey_token' in body ? await passkeys.takeChallenge(body.passkey_token, null, trx) : undefined
      if ('passkey_token' in body && challenge === undefined) return { result: { refused: 'token' }, events: [] }
      // The user's row first, as every change of a user locks it; then what hangs on it.
      if (verified !== null) await request.passwordUnchanged(reply, trx, verified)
      /* c8 ignore next -- the caller deleted since the token's check */
      else if (await credentials.lockedPassword(userId, trx) === undefined) return { result: { refused: 'session' }, events: [] }
      if ('code' in body) {
        const checked = await factors.checkTotp(userId, body.code, trx)
        if (checked.check === 'locked') return { result: { locked: checked.retryAfter }, events: [] }
        if (checked.check === 'none') return { result: { refused: 'none' }, events: [] }
        if (checked.check !== 'accepted') return await failed('code', trx)
      }
      if ('passkey_token' in body) {
        const passkey = await passkeys.lockByCredential(body.credential.id, trx)
        if (passkey?.userId !== userId) return await failed('passkey', trx)
        const counter = await authenticatedCounter(settings, body.credential as AuthenticationResponseJSON, challenge!, passkey)
        if (counter === undefined) return await failed('passkey', trx)
        await passkeys.used(passkey.id, counter, trx)
      }
      const until = await sessions.reauthenticated(userId, sessionId, trx)
      if (until === undefined) return { result: { refused: 'session' }, events: [] }
      return { result: { until }, events: [{ action: 'reauthenticate', resource: 'session', id: sessionId, after: { user_id: userId, factor } }] }
    })
    if ('locked' in outcome) {
      reply.header('retry-after', String(outcome.locked))
      throw fastify.httpErrors.tooManyRequests(`Too many wrong codes in a row: the authenticator app's codes are refused for ${Math.ceil(outcome.locked / 60)} minutes more`)
    }
    if ('refused' in outcome) {
      if (outcome.refused === 'none') throw new CodedError('mfa_not_enrolled', 'The account has no authenticator app: reauthenticate with the password or a passkey')
      if (outcome.refused === 'token') throw new CodedError('invalid_passkey_token', 'The passkey ceremony is unknown, expired or spent: ask for new options (POST /api/login/passkey/options)')
      reply.header('www-authenticate', 'Bearer realm="api"')
      if (outcome.refused === 'session') throw new CodedError('invalid_token', 'The session ended meanwhile: log in again')
      const ended = 'ended' in outcome && outcome.ended ? `; the ${REAUTHENTICATION_FAILURES}th wrong proof ended this session: log in again` : ''
      if (outcome.refused === 'code') throw new CodedError('invalid_mfa_code', `The code does not match the authenticator app's, or was used before${ended}`)
      throw new CodedError('invalid_passkey', `The passkey is not one of the caller's, or its answer does not verify${ended}`)
    }
    return { success: true as const, data: { reauthenticated_until: outcome.until }, message: `For ${REAUTHENTICATION_SECONDS / 60} minutes this session may leave current_password out where it is asked again` }
  })
}

export default reauthenticate
