import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import { sessionsRepository, type SessionRecord } from './repository.js'
import { sessionSchemas, sessionSharedSchemas, sessionsTag } from './schema.js'

const SWEEP_EVERY_MS = 10 * 60_000

/**
 * `/api/sessions`: a caller's own sessions, for any caller with a valid token; and the sweep of
 * sessions and refresh tokens long past. Their data access is repository.ts, which login,
 * refresh and logout use too.
 */
const sessions: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: sessionsTag, schemas: sessionSharedSchemas })
  const repository = sessionsRepository(fastify.database, fastify.callerCache, fastify.config.auth)
  // Every instance sweeps: the deletes are cheap, and two at once delete each row once.
  const sweeping = setInterval(() => { void repository.sweep(fastify.log) }, SWEEP_EVERY_MS).unref()
  fastify.addHook('onClose', async () => clearInterval(sweeping))
  const notFound = (id: number) => fastify.httpErrors.notFound(`Session ${id} not found`)
  // The caller's own sessions (another user's is as unknown as none), audited only: clients do
  // not follow sessions through the change outbox; no read tags one.
  const ownSessions = (userId: number): RecordKind<SessionRecord & { user_id: number }> => ({
    resource: 'session', lock: (sessionId, trx) => repository.lockOwn(userId, sessionId, trx), notFound, tag: false, followed: false
  })
  // A session is a person's login: an API key neither lists nor ends one.
  fastify.addHook('onRequest', fastify.refuseKeys)

  fastify.get('/', { schema: sessionSchemas.index }, async (request) => {
    const { id, sessionId } = request.user
    const live = await repository.list(id)
    return { success: true as const, data: live.map(session => ({ ...session, current: session.id === sessionId })) }
  })

  fastify.delete('/:id', { schema: sessionSchemas.destroy }, async (request) => {
    const { id, sessionId } = request.user
    const reason = 'ended by its user'
    const ended = await request.deleteRecord(ownSessions(id), request.params.id,
      (trx, session) => repository.endOne(id, session.id, reason, trx),
      { action: 'end', event: { user_id: id, end_reason: reason } })
    const { user_id: _, ...session } = ended
    return { success: true as const, data: { ...session, current: ended.id === sessionId }, message: 'Session ended' }
  })
}

export default sessions
