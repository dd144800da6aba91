import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { confirmedPassword } from '../../../../lib/auth/passwords.js'
import { credentialQueries } from '../../../../lib/auth/credential-queries.js'
import { mailedTokenHash, newMailedToken, MAILED_TOKEN_BODY_LIMIT, usableToken } from '../../../../lib/auth/mailed-tokens.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import { passwordResetMail } from '../../../../lib/mail/link-mail.js'
import { apiKeysRepository } from '../../(authenticated)/keys/repository.js'
import { passkeysRepository } from '../../(authenticated)/profile/passkeys/repository.js'
import { usersRepository } from '../../(authenticated)/users/repository.js'
import type { User } from '../../(authenticated)/users/schema.js'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import { passwordSchemas } from './schema.js'

/** How long a token sent works. */
const RESET_TOKEN_TTL_SECONDS = 3_600

/** The reset of this token's hash, if it still works. */
const usable = (db: Knex, hash: Buffer) => usableToken(db, 'password_resets', hash)

const invalidToken = () => new CodedError('invalid_reset_token', 'The password reset token is invalid, expired or spent: ask for another')

/**
 * `/api/password/forgot` and `/api/password/reset`: a password reset by mail, for a user who
 * forgot theirs (README, "Password reset"). Needs SMTP_URL (plugins/app/mail.ts).
 */
const password: FastifyPluginAsyncTypebox = async (fastify) => {
  const credentials = credentialQueries(fastify.database)
  const users = usersRepository(fastify.database, fastify.callerCache)
  const keys = apiKeysRepository(fastify.database, fastify.callerCache)
  const passkeys = passkeysRepository(fastify.database)
  // The user a reset changes, under their lock: no tag asked (the token is the proof); audited
  // as `reset-password`, in the change feed as any change of a user.
  const resetUser: RecordKind<User> = { resource: 'user', lock: users.findLocked, tag: false, notFound: invalidToken }
  /** Makes the user's token, replacing any earlier one, with its audit entry, and mails its link. */
  async function sendReset (request: FastifyRequest, email: string) {
    const user = await credentials.find(email)
    if (user === undefined) return
    const { token, hash } = newMailedToken()
    await fastify.knex.transaction(async trx => {
      await trx('password_resets').insert({ user_id: user.id, token_hash: hash, expires_at: trx.raw('now() + make_interval(secs => ?)', [RESET_TOKEN_TTL_SECONDS]), created_at: trx.fn.now() })
        .onConflict('user_id').merge()
      await request.audit(trx, { action: 'reset-request', resource: 'user', id: user.id, actor: { id: null } })
    })
    // To the address the user has, not as it was typed (which names the same user in another case).
    const { email: address } = await fastify.knex('users').where({ id: user.id }).first('email') as { email: string }
    const link = `${fastify.mail.publicUrl}/reset-password?token=${token}`
    await fastify.mail.send(passwordResetMail(address, link, RESET_TOKEN_TTL_SECONDS / 60))
  }

  // Answered before the address is looked up: the same answer, in the same time, for an
  // address no user has.
  fastify.post('/forgot', { schema: passwordSchemas.forgot, bodyLimit: MAILED_TOKEN_BODY_LIMIT, preValidation: fastify.throttle('password-forgot') }, async (request, reply) => {
    fastify.mail.ensureOn()
    fastify.mail.later(request, 'a password reset mail', async () => sendReset(request, request.body.email))
    return reply.code(202).send({ success: true as const, message: 'If a user has this address, a link to reset the password is on its way to it' })
  })

  fastify.post('/reset', { schema: passwordSchemas.reset, bodyLimit: MAILED_TOKEN_BODY_LIMIT, preValidation: fastify.throttle('password-reset') }, async (request, reply) => {
    const { token, password: newPassword, c_password: confirmation } = request.body
    const hash = mailedTokenHash(token)
    // Hashed only for a token that works (and read again, under the user's lock, below).
    fastify.mail.ensureOn()
    const found = await usable(fastify.knex, hash).first<{ user_id: number } | undefined>('user_id')
    if (found === undefined) throw invalidToken()
    const passwordHash = await fastify.passwords.hash(confirmedPassword(newPassword, confirmation))
    const actor = { id: found.user_id }
    // The user's row locked first, as every change of a user locks it before the rows that hang
    // on it (a change of password, which voids the token, waits there rather than in a circle).
    await request.updateRecord(reply, resetUser, found.user_id, async trx => {
      // Spent in the transaction that uses it: of two resets with one token, one sets the password.
      const [spent] = await usable(trx, hash).delete().returning('user_id') as Array<{ user_id: number }>
      if (spent === undefined) throw invalidToken()
      // The link came by mail to the user's address: it is proven theirs too.
      const user = await users.update(spent.user_id, { passwordHash, emailVerified: 'now', recovery: true }, trx)
      await users.endAllSessions(spent.user_id, trx)
      for (const key of await keys.revokeAll(spent.user_id, trx)) await request.audit(trx, { action: 'revoke', resource: 'key', id: key.id, before: key, actor })
      // A passkey is a way in without the password: whoever held the account may have added one.
      for (const passkey of await passkeys.removeAll(spent.user_id, trx)) {
        await request.audit(trx, { action: 'passkey-remove', resource: 'passkey', id: passkey.id, before: { user_id: spent.user_id, name: passkey.name }, actor })
      }
      return user
    }, { action: 'reset-password', secrets: ['password'], actor: () => actor })
    return { success: true as const, message: 'The password is set; every session and API key of the account has ended: log in again' }
  })
}

export default password
