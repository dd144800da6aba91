import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { versionTag } from '../../../../lib/http/entity-tags.js'
import { BATCH_BODY_LIMIT } from '../../../../lib/http/limits.js'
import { clientsRepository } from './repository.js'
import type { BatchKind } from '../../../../plugins/app/batch-writes.js'
import { acceptImportFiles } from '../../../../plugins/app/import-writes.js'
import type { FollowedKind } from '../../../../plugins/app/write-path.js'
import { Client, clientListFields, clientsTag, clientSchemas, clientSharedSchemas, type ClientInput } from './schema.js'

/** `/api/clients`: the first backend's clients resource, behind the client-* permissions. */
const clients: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: clientsTag, schemas: clientSharedSchemas, events: { resource: 'client', record: Client } })
  const repository = clientsRepository(fastify.database)
  const notFound = (id: number) => fastify.httpErrors.notFound(`Client ${id} not found`)
  const kind: FollowedKind<Client> = { resource: 'client', lock: repository.lock, notFound }
  const batchKind: BatchKind<Client, ClientInput> = { resource: 'client', insertion: repository.batchInsertion }

  fastify.get('/', { schema: clientSchemas.index, onRequest: fastify.can('client-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, clientListFields)
    const format = fastify.lists.exportFormat(request)
    if (format !== undefined) return fastify.lists.sendExport(request, reply, timeoutMs => repository.export(list, format, timeoutMs), format, 'clients')
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: clientSchemas.show, onRequest: fastify.can('client-list') }, async (request, reply) => {
    const client = await repository.find(request.params.id)
    if (!client) throw notFound(request.params.id)
    return reply.sendTagged(versionTag(client.version), { success: true as const, data: client })
  })

  fastify.post('/', { schema: clientSchemas.store, onRequest: fastify.can('client-create') }, async (request, reply) => {
    return request.insertRecord(reply, kind, repository.insertion(request.body), client =>
      ({ body: { success: true as const, data: client, message: 'Client created' }, location: `${fastify.prefix}/${client.id}` }))
  })

  fastify.post('/batch', { schema: clientSchemas.batch, bodyLimit: BATCH_BODY_LIMIT, onRequest: fastify.can('client-create') }, async (request, reply) => {
    return request.insertRecords(reply, batchKind, request.body, request.query.mode, outcomes =>
      ({ success: true as const, data: outcomes, message: `${outcomes.filter(outcome => outcome.status === 201).length} of ${outcomes.length} clients created` }))
  })

  const fileRoutes: FastifyPluginAsyncTypebox = async (files) => {
    acceptImportFiles(files)
    files.post('/import', { schema: clientSchemas.import, onRequest: fastify.can('client-create') }, async (request, reply) => {
      return request.importRecords(reply, repository.importKind, 'error', result =>
        ({ success: true as const, data: result, message: `${result.inserted} clients imported` }))
    })
  }
  await fastify.register(fileRoutes)

  for (const method of ['PUT', 'PATCH'] as const) {
    fastify.route({
      method,
      url: '/:id',
      schema: clientSchemas.update(method),
      onRequest: fastify.can('client-edit'),
      handler: async (request, reply) => {
        const { id } = request.params
        const client = await request.updateRecord(reply, kind, id, trx => repository.update(id, request.body, trx))
        return { success: true as const, data: client, message: 'Client updated' }
      }
    })
  }

  fastify.delete('/:id', { schema: clientSchemas.destroy, onRequest: fastify.can('client-delete') }, async (request) => {
    const { id } = request.params
    const client = await request.deleteRecord(kind, id, trx => repository.remove(id, trx))
    return { success: true as const, data: client, message: 'Client deleted' }
  })
}

export default clients
