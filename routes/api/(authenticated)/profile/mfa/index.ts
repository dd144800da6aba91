import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { credentialQueries } from '../../../../../lib/auth/credential-queries.js'
import { newTotpSecret, totpEnrolment } from '../../../../../lib/auth/totp.js'
import { CodedError } from '../../../../../lib/http/error-codes.js'
import { InvalidFields } from '../../../../../lib/http/invalid-fields.js'
import type { Change } from '../../../../../plugins/app/audit.js'
import { ENROLMENT_FAILURES, mfaRepository, type CodeCheck } from './repository.js'
import { mfaSchemas } from './schema.js'

/** Bodies of a password or a code: small. */
const BODY_LIMIT = 4 * 1024

const notEnrolled = (what: string) => new CodedError('mfa_not_enrolled', what)

/**
 * `/api/profile/mfa`: the caller's second factors (README, "Second factors"): an authenticator
 * app (TOTP) and its recovery codes. Every change but the confirmation, which proves the app
 * with its code, asks for the password again (or a session reauthenticated in the last 5
 * minutes): a stolen access token can neither turn a factor off nor read new recovery codes.
 * Never with an API key.
 */
const mfa: FastifyPluginAsyncTypebox = async (fastify) => {
  const factors = mfaRepository(fastify.database, fastify.callerCache)
  const credentials = credentialQueries(fastify.database)
  // Audited as the caller's user changing (never the secret nor a code).
  const event = (request: FastifyRequest, action: Change['action']): Change => ({ action, resource: 'user', id: request.user.id, after: { factor: 'totp' } })

  /**
   * A change of the caller's factors behind their password: checked (and counted) before the
   * transaction, and still theirs under their row's lock in it, where `change` runs.
   */
  async function withPassword<Result> (request: FastifyRequest, reply: FastifyReply, currentPassword: string | undefined, change: (trx: Knex) => Promise<{ result: Result, events: Change[] }>): Promise<Result | undefined> {
    const verified = await request.checkCurrentPassword(reply, currentPassword, 'is needed to change the second factors')
    /* c8 ignore next -- a client gone, or answered 503, before its hash's turn (plugins/app/password-check.ts) */
    if (verified === undefined) return undefined
    return await request.recordEvents(async trx => {
      await request.passwordUnchanged(reply, trx, verified)
      return await change(trx)
    })
  }

  fastify.addHook('onRequest', fastify.refuseKeys)

  fastify.get('/', { schema: mfaSchemas.status }, async (request) => {
    return { success: true as const, data: await factors.status(request.user.id) }
  })

  fastify.post('/totp', { schema: mfaSchemas.startTotp, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { id } = request.user
    const secret = newTotpSecret()
    // The app names the account by its address, as it is under the lock the password check took.
    const email = await withPassword(request, reply, request.body.current_password, async trx => {
      if (!await factors.startTotp(id, secret, trx)) throw new CodedError('mfa_enrolled', 'The account has an authenticator app already: turn it off first (DELETE /api/profile/mfa/totp)')
      return { result: (await credentials.emailOf(id, trx))!, events: [event(request, 'mfa-start')] }
    })
    /* c8 ignore next -- a client gone before its hash's turn */
    if (email === undefined) return
    const { uri, qrSvg } = await totpEnrolment(fastify.config.auth.totpIssuer, email, secret)
    return { success: true as const, data: { secret, otpauth_uri: uri, qr_code_svg: qrSvg }, message: 'Add the secret to an authenticator app, then confirm it with the app\'s first code (POST /api/profile/mfa/totp/confirm)' }
  })

  // Counted per client IP: a million codes are not to be tried with a token.
  fastify.post('/totp/confirm', { schema: mfaSchemas.confirmTotp, bodyLimit: BODY_LIMIT, preValidation: fastify.throttle('mfa-confirm') }, async (request) => {
    const { id } = request.user
    // A wrong code is counted in the transaction, which commits: the refusal comes after it.
    const { check, codes } = await request.recordEvents<{ check: CodeCheck, codes: string[] }>(async trx => {
      // The user's row first, as every change of a user locks it.
      /* c8 ignore next -- the caller deleted since the token's check */
      if (await credentials.lockedPassword(id, trx) === undefined) throw new CodedError('invalid_token', 'The token is no longer valid')
      const check = await factors.confirmTotp(id, request.body.code, trx)
      if (check !== 'accepted') return { result: { check, codes: [] }, events: [] }
      return { result: { check, codes: await factors.replaceRecoveryCodes(id, trx) }, events: [event(request, 'mfa-enable')] }
    })
    if (check === 'none') throw notEnrolled('No enrolment of an authenticator app is under way: start one (POST /api/profile/mfa/totp)')
    if (check === 'wrong') throw new InvalidFields({ code: [`does not match the authenticator app's code of now (check the device's clock); the ${ENROLMENT_FAILURES}th wrong code ends the enrolment`] })
    return { success: true as const, data: { recovery_codes: codes }, message: 'The authenticator app is on: logins ask for its code. Keep the recovery codes somewhere safe: they are not shown again' }
  })

  fastify.delete('/totp', { schema: mfaSchemas.disableTotp, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const done = await withPassword(request, reply, request.body.current_password, async trx => {
      if (!await factors.disableTotp(request.user.id, trx)) throw notEnrolled('The account has no authenticator app')
      return { result: true, events: [event(request, 'mfa-disable')] }
    })
    /* c8 ignore next -- a client gone before its hash's turn */
    if (done === undefined) return
    return { success: true as const, data: null, message: 'The authenticator app is off: logins ask for the password only' }
  })

  fastify.post('/recovery-codes', { schema: mfaSchemas.recoveryCodes, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { id } = request.user
    const codes = await withPassword(request, reply, request.body.current_password, async trx => {
      if (!await factors.hasTotp(id, trx)) throw notEnrolled('The account has no authenticator app: recovery codes come with one')
      return { result: await factors.replaceRecoveryCodes(id, trx), events: [event(request, 'mfa-recovery-codes')] }
    })
    /* c8 ignore next -- a client gone before its hash's turn */
    if (codes === undefined) return
    return { success: true as const, data: { recovery_codes: codes }, message: 'New recovery codes; the earlier ones no longer work. They are not shown again' }
  })
}

export default mfa
