import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { contentTag } from '../../../lib/http/entity-tags.js'
import { CodedError } from '../../../lib/http/error-codes.js'
import type { VerificationMail } from '../../../plugins/app/address-verification.js'
import { InvalidFields } from '../../../lib/http/invalid-fields.js'
import { confirmedPassword } from '../../../lib/auth/passwords.js'
import type { RecordKind } from '../../../plugins/app/write-path.js'
import type { User } from './users/schema.js'
import { rolesRepository } from './roles/repository.js'
import { sessionsRepository } from './sessions/repository.js'
import { usersRepository } from './users/repository.js'
import { accountSchemas, accountSharedSchemas, type Profile } from './schema.js'

/**
 * The profile changes with the caller's roles and their permissions: its tag is its digest. Its
 * change locks the user's row, as every change of a user does, so an `If-Match` checked in the
 * change's transaction holds until it commits.
 */
const profileTag = (profile: Profile | undefined) => contentTag(JSON.stringify(profile))

/** `/api/logout`, `/api/profile` and `/api/permissions`: any caller with a valid token. */
const account: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ schemas: accountSharedSchemas })
  const users = usersRepository(fastify.database, fastify.callerCache)
  const sessions = sessionsRepository(fastify.database, fastify.callerCache, fastify.config.auth)
  // The caller's own user, tagged as their profile: its If-Match is the profile's ETag.
  const ownUser: RecordKind<User> = {
    resource: 'user',
    lock: users.findLocked,
    tag: async (user, trx) => profileTag(await users.profile(user.id, trx)),
    /* c8 ignore next -- the caller deleted since the token's check */
    notFound: () => new CodedError('invalid_token', 'The token is no longer valid')
  }
  fastify.get('/logout', { schema: accountSchemas.logout, onRequest: fastify.refuseKeys }, async (request) => {
    const { id, jti, exp, sessionId } = request.user
    const all = request.query.scope === 'all'
    await request.recordEvents(async trx => {
      const logout = { action: 'logout', resource: 'session', id: sessionId ?? null, after: { user_id: id, scope: all ? 'all' : 'this session' } } as const
      if (all) await users.endAllSessions(id, trx)
      else if (sessionId !== undefined) {
        // Ended since the token's check (by another logout of it, from another device, …):
        // whatever ended it wrote its entry; this logout changed nothing.
        if (!await sessions.endOne(id, sessionId, 'logout', trx)) return { result: undefined, events: [] }
      } else {
        // A token of no session, issued before sessions were.
        await users.revokeToken(jti, new Date(exp * 1000), trx)
      }
      return { result: undefined, events: [logout] }
    })
    return { success: true as const, data: null, message: 'Logged out' }
  })

  fastify.get('/profile', { schema: accountSchemas.profile }, async (request, reply) => {
    const profile = await users.profile(request.user.id)
    return reply.sendTagged(profileTag(profile), { success: true as const, data: profile! })
  })

  // The caller's own account, without user-edit. A current password sent is checked as a
  // login's is, and counted with logins, whatever else changes; a new e-mail address or password
  // needs it: a stolen access token alone cannot take the account over.
  fastify.patch('/profile', { schema: accountSchemas.updateProfile, onRequest: fastify.refuseKeys }, async (request, reply) => {
    const { name, email, password, c_password: confirmation, current_password: currentPassword } = request.body
    if (name === undefined && email === undefined && password === undefined && confirmation === undefined) {
      throw new InvalidFields({ body: ['must change at least one of name, email and password'] })
    }
    // A missing or malformed If-Match is refused before the password is checked (and counted).
    request.ifMatch()
    const { id, jti, exp, sessionId } = request.user
    const proofNeeded = currentPassword !== undefined || email !== undefined || password !== undefined || confirmation !== undefined
    const verified = proofNeeded ? await request.checkCurrentPassword(reply, currentPassword, 'is needed to change the e-mail address or the password') : undefined
    /* c8 ignore next -- a client gone, or answered 503, before its hash's turn (plugins/app/password-check.ts) */
    if (proofNeeded && verified === undefined) return
    const passwordHash = password === undefined && confirmation === undefined
      ? undefined
      : await fastify.passwords.hash(confirmedPassword(password ?? '', confirmation))
    let mail: VerificationMail | null = null
    await request.updateRecord(reply, ownUser, id, async (trx, current) => {
      // The caller's row, locked: the password checked is still theirs (no recovery committed
      // since the check).
      if (verified !== undefined) await request.passwordUnchanged(reply, trx, verified)
      const address = await fastify.addressVerification.change(trx, current, email)
      mail = address.mail
      const after = await users.update(id, { name, ...address.update, passwordHash }, trx)
      if (passwordHash !== undefined) await users.endAllSessions(id, trx, { jti, expiresAt: new Date(exp * 1000), sessionId })
      return after
    }, { secrets: passwordHash === undefined ? [] : ['password'] })
    fastify.addressVerification.send(request, mail)
    const profile = await users.profile(id)
    return reply.sendTagged(profileTag(profile), { success: true as const, data: profile!, message: mail === null ? 'Profile updated' : 'Profile updated; the new e-mail address replaces the old one once the link mailed to it is followed' })
  })

  fastify.get('/permissions', { schema: accountSchemas.permissions }, async () => {
    return { success: true as const, data: await rolesRepository(fastify.database, fastify.callerCache).permissions() }
  })
}

export default account
