import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { accountSchemas } from './schema.js'

/** `/api/logout`, `/api/profile` and `/api/permissions`: any caller with a valid token. */
const account: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.get('/logout', { schema: accountSchemas.logout }, async (request) => {
    const { id, jti, exp } = request.user
    if (request.query.scope === 'all') {
      await fastify.usersRepository.endAllSessions(id)
    } else {
      await fastify.knex.transaction(async trx => {
        // The expired entries are of no more use: each token fails on its exp by then.
        await trx('revoked_tokens').where('expires_at', '<', trx.fn.now()).delete()
        await trx('revoked_tokens').insert({ jti, expires_at: new Date(exp * 1000) }).onConflict('jti').ignore()
      })
    }
    return { success: true as const, data: null, message: 'Logged out' }
  })

  fastify.get('/profile', { schema: accountSchemas.profile }, async (request) => {
    const profile = await fastify.usersRepository.profile(request.user.id)
    return { success: true as const, data: profile! }
  })

  fastify.get('/permissions', { schema: accountSchemas.permissions }, async () => {
    return { success: true as const, data: await fastify.rolesRepository.permissions() }
  })
}

export default account
