import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { RegistrationResponseJSON } from '@simplewebauthn/server'
import { registeredPasskey, registrationOptions } from '../../../../../lib/auth/passkeys.js'
import { CodedError } from '../../../../../lib/http/error-codes.js'
import { InvalidFields } from '../../../../../lib/http/invalid-fields.js'
import { passkeysRepository } from './repository.js'
import { passkeySchemas, type Passkey } from './schema.js'

/** A password's body, or a browser's answer (its attestation at most 32 KiB). */
const BODY_LIMIT = 64 * 1024

/**
 * `/api/profile/passkeys`: the caller's passkeys (README, "Passkeys"). Registering one starts
 * with the password asked again (or a session reauthenticated in the last 5 minutes), as does
 * removing one: a stolen access token can add no way in
 * nor take one away. Never with an API key.
 */
const passkeys: FastifyPluginAsyncTypebox = async (fastify) => {
  const stored = passkeysRepository(fastify.database)
  const { passkeys: settings, totpIssuer: siteName } = fastify.config.auth

  fastify.addHook('onRequest', fastify.refuseKeys)

  fastify.get('/', { schema: passkeySchemas.list }, async (request) => {
    return { success: true as const, data: await stored.list(request.user.id) }
  })

  fastify.post('/options', { schema: passkeySchemas.options, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { id } = request.user
    const verified = await request.checkCurrentPassword(reply, request.body.current_password, 'is needed to register a passkey')
    /* c8 ignore next -- a client gone, or answered 503, before its hash's turn (plugins/app/password-check.ts) */
    if (verified === undefined) return
    const answer = await request.recordEvents(async trx => {
      await request.passwordUnchanged(reply, trx, verified)
      const user = await trx('users').where({ id }).first<{ email: string, name: string }>('email', 'name')
      const options = await registrationOptions(settings, siteName, user, await stored.credentialIds(id, trx))
      return { result: { options, token: await stored.issueChallenge(id, options.challenge, trx) }, events: [] }
    })
    return { success: true as const, data: answer.options, passkey_token: answer.token }
  })

  fastify.post('/', { schema: passkeySchemas.add, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { id } = request.user
    const { passkey_token: token, name, credential } = request.body
    // The challenge is spent by the first answer, whatever it comes to: the transaction commits,
    // and the refusal comes after it.
    const outcome = await request.recordEvents<{ added: Passkey } | { refused: 'token' | 'credential' | 'registered' }>(async trx => {
      const challenge = await stored.takeChallenge(token, id, trx)
      if (challenge === undefined) return { result: { refused: 'token' }, events: [] }
      const passkey = await registeredPasskey(settings, credential as RegistrationResponseJSON, challenge)
      if (passkey === undefined) return { result: { refused: 'credential' }, events: [] }
      const row = await stored.add(id, name.trim(), passkey, trx)
      // A browser's answer signs one challenge: only one registration carries a credential, but
      // the database's unique credential id holds whatever comes.
      /* c8 ignore next */
      if (row === undefined) return { result: { refused: 'registered' }, events: [] }
      return { result: { added: row }, events: [{ action: 'passkey-add', resource: 'passkey', id: row.id, after: { user_id: id, name: row.name } }] }
    })
    if ('refused' in outcome) {
      if (outcome.refused === 'token') throw new CodedError('invalid_passkey_token', 'The passkey ceremony is unknown, expired or spent: ask for new options')
      /* c8 ignore next */
      if (outcome.refused === 'registered') throw new CodedError('conflict', 'This passkey is registered already')
      throw new InvalidFields({ credential: ['does not verify: an answer to these options, from a page of the site, with the user verified'] })
    }
    const added = outcome.added
    return reply.code(201).send({ success: true as const, data: added, message: 'The passkey is registered: POST /api/login/passkey logs in with it' })
  })

  fastify.delete('/:id', { schema: passkeySchemas.remove, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { id: userId } = request.user
    const verified = await request.checkCurrentPassword(reply, request.body.current_password, 'is needed to remove a passkey')
    /* c8 ignore next -- a client gone before its hash's turn */
    if (verified === undefined) return
    const removed = await request.recordEvents(async trx => {
      await request.passwordUnchanged(reply, trx, verified)
      const row = await stored.remove(userId, request.params.id, trx)
      if (row === undefined) throw fastify.httpErrors.notFound(`Passkey ${request.params.id} not found`)
      return { result: row, events: [{ action: 'passkey-remove', resource: 'passkey', id: row.id, before: { user_id: userId, name: row.name } }] }
    })
    return { success: true as const, data: removed, message: 'The passkey is removed' }
  })
}

export default passkeys
