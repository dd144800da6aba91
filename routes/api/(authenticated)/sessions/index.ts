import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { sessionSchemas, sessionSharedSchemas, sessionsTag } from './schema.js'

/** `/api/sessions`: a caller's own sessions, for any caller with a valid token. */
const sessions: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: sessionsTag, schemas: sessionSharedSchemas })
  const { sessionsRepository } = fastify
  // A session is a person's login: an API key neither lists nor ends one.
  fastify.addHook('onRequest', fastify.refuseKeys)

  fastify.get('/', { schema: sessionSchemas.index }, async (request) => {
    const { id, sessionId } = request.user
    const live = await sessionsRepository.list(id)
    return { success: true as const, data: live.map(session => ({ ...session, current: session.id === sessionId })) }
  })

  fastify.delete('/:id', { schema: sessionSchemas.destroy }, async (request) => {
    const { id, sessionId } = request.user
    const ended = await request.guardWrite(() => fastify.knex.transaction(async trx => {
      const session = await sessionsRepository.endOne(id, request.params.id, 'ended by its user', trx)
      if (session) await request.audit(trx, { action: 'end', resource: 'session', id: session.id, after: { user_id: id, end_reason: 'ended by its user' } })
      return session
    }))
    if (!ended) throw fastify.httpErrors.notFound(`Session ${request.params.id} not found`)
    const { user_id: _, ...session } = ended
    return { success: true as const, data: { ...session, current: ended.id === sessionId }, message: 'Session ended' }
  })
}

export default sessions
