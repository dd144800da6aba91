import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { emailKey } from '../../lib/auth/email.js'
import { newMailedToken } from '../../lib/auth/mailed-tokens.js'
import { addressVerificationMail } from '../../lib/mail/link-mail.js'
import { CodedError } from '../../lib/http/error-codes.js'

declare module 'fastify' {
  interface FastifyInstance {
    addressVerification: AddressVerification
  }
}

/** A verification mail to send once the write that asked for it has committed. */
export interface VerificationMail { address: string, token: string, change: boolean }

export interface AddressVerification {
  /**
   * A token for `address` of user `userId` (their address, or the one they change to; `change`
   * says which), replacing any earlier one, written in `trx`; null with verification off.
   */
  issue (trx: Knex, userId: number, address: string, change: boolean): Promise<VerificationMail | null>
  /**
   * What a change of `current`'s address to `email` writes: with verification on, the address
   * waits as `pending_email`, with a token mailed to it (an address another user has: 409
   * `email_taken`); off, it is made at once, unverified; the same address in another case is
   * made at once, still verified.
   */
  change (trx: Knex, current: { id: number, email: string }, email: string | undefined): Promise<{ update: { email?: string, pendingEmail?: string, emailVerified?: 'kept' }, mail: VerificationMail | null }>
  /** 409 `email_taken` if a user other than `userId` has `email`, in any spelling of it. */
  ensureFree (trx: Knex, userId: number, email: string): Promise<void>
  /** Whether another user (not deleted) has `email` as theirs. */
  taken (trx: Knex, userId: number, email: string): Promise<boolean>
  /** Sends `mail`, if any, after the request is answered (plugins/app/mail.ts's `later`). */
  send (request: FastifyRequest, mail: VerificationMail | null): void
  /** Sends `mail` now: from work already done `later`, so that mails go out in the order their tokens were made. */
  deliver (mail: VerificationMail): Promise<void>
}

/** Whether two spellings of an address reach one mailbox: the same but for case. */
const sameMailbox = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

/** How long a verification token works. */
const VERIFICATION_TTL_SECONDS = 86_400

/**
 * E-mail verification (README, "E-mail verification"): a token mailed to an address proves it
 * the user's. Written once for every route that sends one (register, a user made, a change of
 * address, a mail asked again); POST /api/email/verify spends it.
 */
export default fp(async (fastify) => {
  // Addresses are verified by mail: with SMTP_URL.
  const on = fastify.config.mail !== null

  const issue: AddressVerification['issue'] = async (trx, userId, address, change) => {
    if (!on) return null
    const { token, hash } = newMailedToken()
    await trx('email_verifications')
      .insert({ user_id: userId, email: address, token_hash: hash, expires_at: trx.raw('now() + make_interval(secs => ?)', [VERIFICATION_TTL_SECONDS]), created_at: trx.fn.now() })
      .onConflict('user_id').merge()
    return { address, token, change }
  }

  const deliver: AddressVerification['deliver'] = async mail => {
    const link = `${fastify.mail.publicUrl}/verify-email?token=${mail.token}`
    await fastify.mail.send(addressVerificationMail(mail.address, link, VERIFICATION_TTL_SECONDS / 3_600, mail.change))
  }

  const taken: AddressVerification['taken'] = async (trx, userId, email) =>
    await trx('users').where({ email_key: emailKey(email) }).whereNull('deleted_at').whereNot({ id: userId }).first('id') !== undefined
  const ensureFree: AddressVerification['ensureFree'] = async (trx, userId, email) => {
    if (await taken(trx, userId, email)) throw new CodedError('email_taken', `The e-mail address ${email} is taken`)
  }

  fastify.decorate('addressVerification', {
    issue,
    ensureFree,
    taken,
    async change (trx, current, email) {
      if (email === undefined) return { update: {}, mail: null }
      // The same mailbox, the address in another case (a change waiting for another ends):
      // nothing to prove, and its verification holds.
      if (sameMailbox(email, current.email)) return { update: { email, emailVerified: 'kept' }, mail: null }
      await ensureFree(trx, current.id, email)
      if (!on) return { update: { email }, mail: null }
      return { update: { pendingEmail: email }, mail: await issue(trx, current.id, email, true) }
    },
    send (request, mail) {
      if (mail !== null) fastify.mail.later(request, 'an e-mail verification mail', async () => deliver(mail))
    },
    deliver
  } satisfies AddressVerification)
}, { name: 'address-verification', dependencies: ['config', 'knex', 'mail'] })
