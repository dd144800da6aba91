import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
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

  fastify.get('/:id', { schema: clientSchemas.show, onRequest: fastify.can('client-list') }, async (request) => {
    const client = await repository.find(request.params.id)
    if (!client) throw notFound(request.params.id)
    return { success: true as const, data: client }
  })

  fastify.post('/', { schema: clientSchemas.store, onRequest: fastify.can('client-create') }, async (request, reply) => {
    const client = await request.guardWrite(() => repository.create(request.body))
    return reply.code(201).header('location', `${fastify.prefix}/${client.id}`)
      .send({ success: true as const, data: client, message: 'Client created' })
  })

  for (const method of ['PUT', 'PATCH'] as const) {
    fastify.route({
      method,
      url: '/:id',
      schema: clientSchemas.update(method),
      onRequest: fastify.can('client-edit'),
      handler: async (request) => {
        const client = await request.guardWrite(() => repository.update(request.params.id, request.body))
        if (!client) throw notFound(request.params.id)
        return { success: true as const, data: client, message: 'Client updated' }
      }
    })
  }

  fastify.delete('/:id', { schema: clientSchemas.destroy, onRequest: fastify.can('client-delete') }, async (request) => {
    const client = await request.guardWrite(() => repository.remove(request.params.id))
    if (!client) throw notFound(request.params.id)
    return { success: true as const, data: client, message: 'Client deleted' }
  })
}

export default clients
