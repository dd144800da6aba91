import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Versioned } from '../../../../../../lib/db/row-versions.js'
import { versionTag } from '../../../../../../lib/http/entity-tags.js'
import { CodedError } from '../../../../../../lib/http/error-codes.js'
import type { RecordKind } from '../../../../../../plugins/app/write-path.js'
import { enrollmentsRepository } from './repository.js'
import { type Enrollment, enrollmentListFields, enrollmentSchemas, enrollmentSharedSchemas, enrollmentsTag } from './schema.js'

/**
 * `/api/enrollments`: a student in a course, the relation docs/adding-a-resource.md adds,
 * behind the enrollment-* permissions. Its foreign keys keep a student or a course with
 * enrollments from being deleted (409 `referenced`), with no line outside this folder.
 */
const enrollments: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: enrollmentsTag, schemas: enrollmentSharedSchemas })
  const repository = enrollmentsRepository(fastify.database, ({ student_id: student, course_id: course }) =>
    new CodedError('conflict', `Student ${student} is enrolled in course ${course} already`))
  const notFound = (id: number) => fastify.httpErrors.notFound(`Enrollment ${id} not found`)
  const kind: RecordKind<Versioned<Enrollment>> = { resource: 'enrollment', lock: repository.lock, notFound }

  fastify.get('/', { schema: enrollmentSchemas.index, onRequest: fastify.can('enrollment-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, enrollmentListFields)
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: enrollmentSchemas.show, onRequest: fastify.can('enrollment-list') }, async (request, reply) => {
    const enrollment = await repository.find(request.params.id)
    if (!enrollment) throw notFound(request.params.id)
    return reply.sendTagged(versionTag(enrollment.version), { success: true as const, data: enrollment })
  })

  fastify.post('/', { schema: enrollmentSchemas.store, onRequest: fastify.can('enrollment-create') }, async (request, reply) => {
    return request.createRecord(reply, kind, trx => repository.create(request.body, trx),
      enrollment => ({ body: { success: true as const, data: enrollment }, location: `${fastify.prefix}/${enrollment.id}` }))
  })

  fastify.patch('/:id', { schema: enrollmentSchemas.patch, onRequest: fastify.can('enrollment-edit') }, async (request, reply) => {
    const { id } = request.params
    const enrollment = await request.updateRecord(reply, kind, id, trx => repository.update(id, request.body, trx))
    return { success: true as const, data: enrollment }
  })

  fastify.delete('/:id', { schema: enrollmentSchemas.destroy, onRequest: fastify.can('enrollment-delete') }, async (request) => {
    const { id } = request.params
    const enrollment = await request.deleteRecord(kind, id, trx => repository.remove(id, trx))
    return { success: true as const, data: enrollment }
  })
}

export default enrollments
