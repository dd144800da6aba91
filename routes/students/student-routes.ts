import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { OpenApiTag } from '../../plugins/external/swagger.js'
import { studentsRepository } from './repository.js'
import { studentListFields, studentSchemas, studentSharedSchemas, type UpdateMode } from './schema.js'

export interface Variant {
  /** Prefix of the operation ids: `v1.students` or `students`. */
  namespace: string
  tag: OpenApiTag
  update: UpdateMode
  /** Whether PATCH is offered beside PUT. */
  patch: boolean
}

/** The five student operations; both variants serve the same table. */
export function studentRoutes (variant: Variant): FastifyPluginAsyncTypebox {
  return async (fastify) => {
    fastify.declareResource({ tag: variant.tag, schemas: studentSharedSchemas })
    const students = studentsRepository(fastify.database, message => fastify.httpErrors.conflict(message))
    const schemas = studentSchemas(variant.namespace, variant.tag.name)
    const notFound = (id: number) => fastify.httpErrors.notFound(`Student ${id} not found`)

    fastify.get('/', { schema: schemas.index }, async (request, reply) => {
      const list = fastify.lists.request(request, studentListFields)
      return fastify.lists.send(reply, list, await students.query(list), { path: fastify.prefix })
    })

    fastify.get('/:id', { schema: schemas.show }, async (request) => {
      const student = await students.find(request.params.id)
      if (!student) throw notFound(request.params.id)
      return student
    })

    fastify.post('/', { schema: schemas.store }, async (request, reply) => {
      const student = await request.guardWrite(() => students.create(request.body))
      return reply.code(201).header('location', `${fastify.prefix}/${student.id}`).send(student)
    })

    const methods = variant.patch ? ['PUT', 'PATCH'] as const : ['PUT'] as const
    for (const method of methods) {
      fastify.route({
        method,
        url: '/:id',
        schema: schemas.update(variant.update, method),
        handler: async (request) => {
          const student = await request.guardWrite(() => students.update(request.params.id, request.body))
          if (!student) throw notFound(request.params.id)
          return student
        }
      })
    }

    fastify.delete('/:id', { schema: schemas.destroy }, async (request, reply) => {
      if (!await request.guardWrite(() => students.remove(request.params.id))) throw notFound(request.params.id)
      return reply.code(204).send(null)
    })
  }
}
