import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Versioned } from '../../../../../../lib/db/row-versions.js'
import { versionTag } from '../../../../../../lib/http/entity-tags.js'
import type { RecordKind } from '../../../../../../plugins/app/write-path.js'
import { notesRepository } from './repository.js'
import { Note, noteListFields, noteSchemas, noteSharedSchemas, notesTag } from './schema.js'

/** `/api/notes`: the resource docs/adding-a-resource.md adds, behind the note-* permissions. */
const notes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: notesTag, schemas: noteSharedSchemas, events: { resource: 'note', record: Note } })
  const repository = notesRepository(fastify.database)
  const notFound = (id: number) => fastify.httpErrors.notFound(`Note ${id} not found`)
  // What the write path needs to know of a note: the rest (transaction, If-Match, audit, outbox,
  // Idempotency-Key, ETag) it does for every resource alike.
  const kind: RecordKind<Versioned<Note>> = { resource: 'note', lock: repository.lock, notFound }

  fastify.get('/', { schema: noteSchemas.index, onRequest: fastify.can('note-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, noteListFields)
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: noteSchemas.show, onRequest: fastify.can('note-list') }, async (request, reply) => {
    const note = await repository.find(request.params.id)
    if (!note) throw notFound(request.params.id)
    return reply.sendTagged(versionTag(note.version), { success: true as const, data: note })
  })

  fastify.post('/', { schema: noteSchemas.store, onRequest: fastify.can('note-create') }, async (request, reply) => {
    return request.createRecord(reply, kind, trx => repository.create(request.body, trx),
      note => ({ body: { success: true as const, data: note }, location: `${fastify.prefix}/${note.id}` }))
  })

  fastify.patch('/:id', { schema: noteSchemas.patch, onRequest: fastify.can('note-edit') }, async (request, reply) => {
    const { id } = request.params
    const note = await request.updateRecord(reply, kind, id, trx => repository.update(id, request.body, trx))
    return { success: true as const, data: note }
  })

  fastify.delete('/:id', { schema: noteSchemas.destroy, onRequest: fastify.can('note-delete') }, async (request) => {
    const { id } = request.params
    const note = await request.deleteRecord(kind, id, trx => repository.remove(id, trx))
    return { success: true as const, data: note }
  })
}

export default notes
