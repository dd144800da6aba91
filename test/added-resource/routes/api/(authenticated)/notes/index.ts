import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { notesRepository } from './repository.js'
import { noteListFields, noteSchemas, noteSharedSchemas, notesTag } from './schema.js'

/** `/api/notes`: the resource docs/adding-a-resource.md adds, behind the note-* permissions. */
const notes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: notesTag, schemas: noteSharedSchemas })
  const repository = notesRepository(fastify.database)
  const notFound = (id: number) => fastify.httpErrors.notFound(`Note ${id} not found`)

  fastify.get('/', { schema: noteSchemas.index, onRequest: fastify.can('note-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, noteListFields)
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: noteSchemas.show, onRequest: fastify.can('note-list') }, async (request) => {
    const note = await repository.find(request.params.id)
    if (!note) throw notFound(request.params.id)
    return { success: true as const, data: note }
  })

  fastify.post('/', { schema: noteSchemas.store, onRequest: fastify.can('note-create') }, async (request, reply) => {
    const note = await request.guardWrite(() => repository.create(request.body))
    return reply.code(201).header('location', `${fastify.prefix}/${note.id}`).send({ success: true as const, data: note })
  })

  fastify.patch('/:id', { schema: noteSchemas.patch, onRequest: fastify.can('note-edit') }, async (request) => {
    const note = await request.guardWrite(() => repository.update(request.params.id, request.body))
    if (!note) throw notFound(request.params.id)
    return { success: true as const, data: note }
  })

  fastify.delete('/:id', { schema: noteSchemas.destroy, onRequest: fastify.can('note-delete') }, async (request) => {
    const note = await request.guardWrite(() => repository.remove(request.params.id))
    if (!note) throw notFound(request.params.id)
    return { success: true as const, data: note }
  })
}

export default notes
