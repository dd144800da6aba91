import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { unwritten } from '../../../../plugins/app/conditional-requests.js'
import { allowedVersions } from '../../../../lib/db/row-versions.js'
import { versionTag } from '../../../../lib/http/entity-tags.js'
import { clientsRepository } from './repository.js'
import { clientListFields, clientsTag, clientSchemas, clientSharedSchemas } from './schema.js'

/** `/api/clients`: the first backend's clients resource, behind the client-* permissions. */
const clients: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: clientsTag, schemas: clientSharedSchemas })
  const repository = clientsRepository(fastify.database)
  const notFound = (id: number) => fastify.httpErrors.notFound(`Client ${id} not found`)

  fastify.get('/', { schema: clientSchemas.index, onRequest: fastify.can('client-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, clientListFields)
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: clientSchemas.show, onRequest: fastify.can('client-list') }, async (request, reply) => {
    const client = await repository.find(request.params.id)
    if (!client) throw notFound(request.params.id)
    return reply.sendTagged(versionTag(client.version), { success: true as const, data: client })
  })

  fastify.post('/', { schema: clientSchemas.store, onRequest: fastify.can('client-create') }, async (request, reply) => {
    return request.insertOnce(reply, request.audited(repository.insertion(request.body), 'client'), client =>
      ({ body: { success: true as const, data: client, message: 'Client created' }, location: `${fastify.prefix}/${client.id}`, etag: versionTag(client.version) }))
  })

  for (const method of ['PUT', 'PATCH'] as const) {
    fastify.route({
      method,
      url: '/:id',
      schema: clientSchemas.update(method),
      onRequest: fastify.can('client-edit'),
      handler: async (request, reply) => {
        const { id } = request.params
        const tags = request.ifMatch()
        const client = await request.guardWrite(() => fastify.knex.transaction(async trx => {
          const before = await repository.lock(id, trx)
          const after = before && await repository.update(id, request.body, allowedVersions(tags), trx)
          if (after) await request.audit(trx, { action: 'update', resource: 'client', id, before, after })
          return after
        }))
        if (!client) throw await unwritten(tags, () => repository.currentTag(id), () => notFound(id))
        return reply.header('etag', versionTag(client.version)).send({ success: true as const, data: client, message: 'Client updated' })
      }
    })
  }

  fastify.delete('/:id', { schema: clientSchemas.destroy, onRequest: fastify.can('client-delete') }, async (request) => {
    const { id } = request.params
    const tags = request.ifMatch()
    const client = await request.guardWrite(() => fastify.knex.transaction(async trx => {
      const deleted = await repository.remove(id, allowedVersions(tags), trx)
      if (deleted) await request.audit(trx, { action: 'delete', resource: 'client', id, before: deleted })
      return deleted
    }))
    if (!client) throw await unwritten(tags, () => repository.currentTag(id), () => notFound(id))
    return { success: true as const, data: client, message: 'Client deleted' }
  })
}

export default clients
