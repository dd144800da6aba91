import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { contentTag } from '../../../lib/http/entity-tags.js'
import { accountSchemas, accountSharedSchemas } from './schema.js'

/** `/api/logout`, `/api/profile` and `/api/permissions`: any caller with a valid token. */
const account: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ schemas: accountSharedSchemas })
  fastify.get('/logout', { schema: accountSchemas.logout }, async (request) => {
    const { id, jti, exp } = request.user
    await request.guardWrite(() => request.query.scope === 'all'
      ? fastify.usersRepository.endAllSessions(id)
      : fastify.usersRepository.revokeToken(jti, new Date(exp * 1000)))
    return { success: true as const, data: null, message: 'Logged out' }
  })

  // The profile changes with the caller's roles and their permissions: its tag is its digest.
  fastify.get('/profile', { schema: accountSchemas.profile }, async (request, reply) => {
    const profile = await fastify.usersRepository.profile(request.user.id)
    return reply.sendTagged(contentTag(JSON.stringify(profile)), { success: true as const, data: profile! })
  })

  fastify.get('/permissions', { schema: accountSchemas.permissions }, async () => {
    return { success: true as const, data: await fastify.rolesRepository.permissions() }
  })
}

export default account
