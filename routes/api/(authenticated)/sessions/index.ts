import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { SessionRecord } from '../../../../plugins/app/sessions-repository.js'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import { sessionSchemas, sessionSharedSchemas, sessionsTag } from './schema.js'

/** `/api/sessions`: a caller's own sessions, for any caller with a valid token. */
const sessions: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: sessionsTag, schemas: sessionSharedSchemas })
  const { sessionsRepository } = fastify
  const notFound = (id: number) => fastify.httpErrors.notFound(`Session ${id} not found`)
  // The caller's own sessions (another user's is as unknown as none), audited only: clients do
  // not follow sessions through the change outbox; no read tags one.
  const ownSessions = (userId: number): RecordKind<SessionRecord & { user_id: number }> => ({
    resource: 'session', lock: (sessionId, trx) => sessionsRepository.lockOwn(userId, sessionId, trx), notFound, tag: false, followed: false
  })
  // A session is a person's login: an API key neither lists nor ends one.
  fastify.addHook('onRequest', fastify.refuseKeys)

  fastify.get('/', { schema: sessionSchemas.index }, async (request) => {
    const { id, sessionId } = request.user
    const live = await sessionsRepository.list(id)
    return { success: true as const, data: live.map(session => ({ ...session, current: session.id === sessionId })) }
  })

  fastify.delete('/:id', { schema: sessionSchemas.destroy }, async (request) => {
    const { id, sessionId } = request.user
    const reason = 'ended by its user'
    const ended = await request.deleteRecord(ownSessions(id), request.params.id,
      (trx, session) => sessionsRepository.endOne(id, session.id, reason, trx),
      { action: 'end', event: { user_id: id, end_reason: reason } })
    const { user_id: _, ...session } = ended
    return { success: true as const, data: { ...session, current: ended.id === sessionId }, message: 'Session ended' }
  })
}

export default sessions
