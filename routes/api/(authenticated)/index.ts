import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { contentTag } from '../../../lib/http/entity-tags.js'
import { InvalidFields } from '../../../lib/http/invalid-fields.js'
import { confirmedPassword } from '../../../lib/auth/passwords.js'
import { accountSchemas, accountSharedSchemas } from './schema.js'

/** `/api/logout`, `/api/profile` and `/api/permissions`: any caller with a valid token. */
const account: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ schemas: accountSharedSchemas })
  fastify.get('/logout', { schema: accountSchemas.logout, onRequest: fastify.refuseKeys }, async (request) => {
    const { id, jti, exp, sessionId } = request.user
    const all = request.query.scope === 'all'
    await request.guardWrite(() => fastify.knex.transaction(async trx => {
      if (all) await fastify.usersRepository.endAllSessions(id, trx)
      else if (sessionId !== undefined) {
        // Ended since the token's check (by another logout of it, from another device, …):
        // whatever ended it wrote its entry; this logout changed nothing.
        if (!await fastify.sessionsRepository.endOne(id, sessionId, 'logout', trx)) return
      } else {
        // A token of no session, issued before sessions were.
        await fastify.usersRepository.revokeToken(jti, new Date(exp * 1000), trx)
      }
      await request.audit(trx, { action: 'logout', resource: 'session', id: sessionId ?? null, after: { user_id: id, scope: all ? 'all' : 'this session' } })
    }))
    return { success: true as const, data: null, message: 'Logged out' }
  })

  // The profile changes with the caller's roles and their permissions: its tag is its digest.
  fastify.get('/profile', { schema: accountSchemas.profile }, async (request, reply) => {
    const profile = await fastify.usersRepository.profile(request.user.id)
    return reply.sendTagged(contentTag(JSON.stringify(profile)), { success: true as const, data: profile! })
  })

  // The caller's own account, without user-edit. The current password is checked as a login's
  // is, and counted with logins: a stolen access token alone cannot take the account over.
  fastify.patch('/profile', { schema: accountSchemas.updateProfile, onRequest: fastify.refuseKeys }, async (request, reply) => {
    const { name, email, password, c_password: confirmation, current_password: currentPassword } = request.body
    if (name === undefined && email === undefined && password === undefined && confirmation === undefined) {
      throw new InvalidFields({ body: ['must change at least one of name, email and password'] })
    }
    const { usersRepository } = fastify
    const { id, jti, exp, sessionId } = request.user
    if (email !== undefined || password !== undefined || confirmation !== undefined) {
      if (currentPassword === undefined) throw new InvalidFields({ current_password: ['is needed to change the e-mail address or the password'] })
      const current = await usersRepository.profile(id)
      /* c8 ignore next -- the caller deleted between the token's check and this read */
      if (!current) throw fastify.httpErrors.unauthorized('The token is no longer valid')
      const attempt = fastify.attempt('login', request, current.email)
      const { counts, user } = await usersRepository.findCredentialsCounting(current.email, attempt)
      attempt.check(reply, counts)
      const matches = await fastify.passwords.verify(user?.password, currentPassword, () => reply.sent || request.socket.destroyed)
      /* c8 ignore next -- a client gone, or answered 503, before its hash's turn, as login's (test/routes/api/auth.test.ts) */
      if (matches === undefined) return // nothing to answer, nor anyone to answer it to
      if (!matches) {
        reply.header('www-authenticate', 'Bearer realm="api"')
        throw fastify.httpErrors.unauthorized('The current password does not match')
      }
    }
    const passwordHash = password === undefined && confirmation === undefined
      ? undefined
      : await fastify.passwords.hash(confirmedPassword(password ?? '', confirmation))
    await request.guardWrite(() => fastify.knex.transaction(async trx => {
      const before = await usersRepository.findLocked(id, trx)
      /* c8 ignore next -- the caller deleted since the token's check */
      if (!before) throw fastify.httpErrors.unauthorized('The token is no longer valid')
      const after = await usersRepository.update(id, { name, email, passwordHash }, trx)
      if (passwordHash !== undefined) await usersRepository.endAllSessions(id, trx, { jti, expiresAt: new Date(exp * 1000), sessionId })
      await request.audit(trx, { action: 'update', resource: 'user', id, before, after, secrets: passwordHash === undefined ? [] : ['password'] })
    }))
    const profile = await usersRepository.profile(id)
    return reply.sendTagged(contentTag(JSON.stringify(profile)), { success: true as const, data: profile!, message: 'Profile updated' })
  })

  fastify.get('/permissions', { schema: accountSchemas.permissions }, async () => {
    return { success: true as const, data: await fastify.rolesRepository.permissions() }
  })
}

export default account
