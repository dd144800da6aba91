import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { emailKey } from '../../../../lib/auth/email.js'
import { mailedTokenHash, MAILED_TOKEN_BODY_LIMIT, usableToken } from '../../../../lib/auth/mailed-tokens.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import type { User } from '../../(authenticated)/users/schema.js'
import { usersRepository } from '../../(authenticated)/users/repository.js'
import { emailSchemas } from './schema.js'

/** The verification of this token's hash, if it still works. */
const usable = (db: Knex, hash: Buffer) => usableToken(db, 'email_verifications', hash)

const invalidToken = () => new CodedError('invalid_verification_token', 'The e-mail verification token is invalid, expired or spent: ask for another')

/** What a user's address stands at, as a mail asked again reads it. */
interface AddressState { email: string, pending_email: string | null, email_verified_at: Date | null }

/**
 * `/api/email/verify` and `/api/email/resend`: e-mail verification by mail (README, "E-mail
 * verification"; the tokens are plugins/app/address-verification.ts's).
 */
const email: FastifyPluginAsyncTypebox = async (fastify) => {
  const users = usersRepository(fastify.database, fastify.callerCache)
  const verification = fastify.addressVerification
  // A user as a verification changes them: no tag asked (the token is the proof).
  const verifiedUser: RecordKind<User> = { resource: 'user', lock: users.findLocked, tag: false, notFound: invalidToken }

  /** A new token for what `email`'s user has to verify, if anything, with its audit entry, and its mail. */
  async function resend (request: FastifyRequest, email: string) {
    const mail = await fastify.knex.transaction(async trx => {
      const user = await trx('users').where({ email_key: emailKey(email) }).whereNull('deleted_at').forNoKeyUpdate()
        .first<({ id: number } & AddressState) | undefined>('id', 'email', 'pending_email', 'email_verified_at')
      if (user === undefined) return null
      // An address waiting that another user has made theirs since is no longer the user's to
      // verify: its mailbox is that user's, who would learn of the change asked.
      const pending = user.pending_email !== null && !await verification.taken(trx, user.id, user.pending_email) ? user.pending_email : null
      if (pending === null && user.email_verified_at !== null) return null
      await request.audit(trx, { action: 'verify-request', resource: 'user', id: user.id, actor: { id: null } })
      return pending === null ? verification.issue(trx, user.id, user.email, false) : verification.issue(trx, user.id, pending, true)
    })
    // Sent at once: this runs `later` already, and a second wait would let a mail asked again
    // overtake this one, its token the older.
    if (mail !== null) await verification.deliver(mail)
  }

  fastify.post('/verify', { schema: emailSchemas.verify, bodyLimit: MAILED_TOKEN_BODY_LIMIT, preValidation: fastify.throttle('email-verify') }, async (request, reply) => {
    const hash = mailedTokenHash(request.body.token)
    const found = await usable(fastify.knex, hash).first<{ user_id: number } | undefined>('user_id')
    if (found === undefined) throw invalidToken()
    const userId = found.user_id
    // The user's update through the write path (audited as `verify-email`, and in the change
    // feed, as the address may change), under the user's lock; no If-Match: the link is the proof.
    await request.updateRecord(reply, verifiedUser, userId, async (trx, before) => {
      // Spent in the transaction that uses it: of two verifications with one token, one counts.
      const [spent] = await usable(trx, hash).delete().returning('email') as Array<{ email: string }>
      if (spent === undefined) throw invalidToken()
      // The address the token went to is the one the user's change waits for, or their own; a
      // token of an address neither is any more (a change made or ended since) proves nothing.
      const change = spent.email === before.pending_email
      if (!change && spent.email !== before.email) throw invalidToken()
      if (change) await verification.ensureFree(trx, userId, spent.email)
      return users.update(userId, change ? { email: spent.email, emailVerified: 'now' } : { emailVerified: 'now' }, trx)
    }, { action: 'verify-email', actor: () => ({ id: userId }) })
    return { success: true as const, message: 'The e-mail address is verified' }
  })

  // Answered before the address is looked up, as a password reset's ask is.
  fastify.post('/resend', { schema: emailSchemas.resend, bodyLimit: MAILED_TOKEN_BODY_LIMIT, preValidation: fastify.throttle('email-resend') }, async (request, reply) => {
    fastify.mail.ensureOn()
    fastify.mail.later(request, 'an e-mail verification mail', async () => resend(request, request.body.email))
    return reply.code(202).send({ success: true as const, message: 'If a user has this address and something to verify, a mail is on its way' })
  })
}

export default email
