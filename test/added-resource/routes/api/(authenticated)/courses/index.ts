import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Versioned } from '../../../../../../lib/db/row-versions.js'
import { versionTag } from '../../../../../../lib/http/entity-tags.js'
import { CodedError } from '../../../../../../lib/http/error-codes.js'
import type { RecordKind } from '../../../../../../plugins/app/write-path.js'
import { coursesRepository } from './repository.js'
import { type Course, courseListFields, courseSchemas, courseSharedSchemas, coursesTag } from './schema.js'

/** `/api/courses`: the courses students enroll in (docs/adding-a-resource.md), behind the course-* permissions. */
const courses: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: coursesTag, schemas: courseSharedSchemas })
  const repository = coursesRepository(fastify.database, code => new CodedError('conflict', `Another course has the code ${code}`))
  const notFound = (id: number) => fastify.httpErrors.notFound(`Course ${id} not found`)
  const kind: RecordKind<Versioned<Course>> = { resource: 'course', lock: repository.lock, notFound }

  fastify.get('/', { schema: courseSchemas.index, onRequest: fastify.can('course-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, courseListFields)
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: courseSchemas.show, onRequest: fastify.can('course-list') }, async (request, reply) => {
    const course = await repository.find(request.params.id)
    if (!course) throw notFound(request.params.id)
    return reply.sendTagged(versionTag(course.version), { success: true as const, data: course })
  })

  fastify.post('/', { schema: courseSchemas.store, onRequest: fastify.can('course-create') }, async (request, reply) => {
    return request.createRecord(reply, kind, trx => repository.create(request.body, trx),
      course => ({ body: { success: true as const, data: course }, location: `${fastify.prefix}/${course.id}` }))
  })

  fastify.patch('/:id', { schema: courseSchemas.patch, onRequest: fastify.can('course-edit') }, async (request, reply) => {
    const { id } = request.params
    const course = await request.updateRecord(reply, kind, id, trx => repository.update(id, request.body, trx))
    return { success: true as const, data: course }
  })

  fastify.delete('/:id', { schema: courseSchemas.destroy, onRequest: fastify.can('course-delete') }, async (request) => {
    const { id } = request.params
    const course = await request.deleteRecord(kind, id, trx => repository.remove(id, trx))
    return { success: true as const, data: course }
  })
}

export default courses
