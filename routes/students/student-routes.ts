import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { OpenApiTag } from '../../plugins/app/swagger.js'
import { CodedError } from '../../lib/http/error-codes.js'
import { BATCH_BODY_LIMIT } from '../../lib/http/limits.js'
import { versionTag } from '../../lib/http/entity-tags.js'
import { studentsRepository } from './repository.js'
import type { BatchKind } from '../../plugins/app/batch-writes.js'
import { acceptImportFiles } from '../../plugins/app/import-writes.js'
import type { FollowedKind } from '../../plugins/app/write-path.js'
import { Student, studentListFields, studentSchemas, studentSharedSchemas, type StudentInput, type UpdateMode } from './schema.js'

export interface Variant {
  /** Prefix of the operation ids: `v1.students` or `students`. */
  namespace: string
  tag: OpenApiTag
  /** Where its tag stands on the documentation page (ResourceDeclaration's `order`). */
  order: number
  update: UpdateMode
  /** Whether PATCH is offered beside PUT. */
  patch: boolean
  /** Whether the bulk routes are offered: `POST /batch`, and the list exported as CSV or NDJSON. */
  bulk: boolean
}

/** The five student operations; both variants serve the same table. */
export function studentRoutes (variant: Variant): FastifyPluginAsyncTypebox {
  return async (fastify) => {
    fastify.declareResource({ tag: variant.tag, order: variant.order, schemas: studentSharedSchemas, events: { resource: 'student', record: Student } })
    const students = studentsRepository(fastify.database, message => new CodedError('email_taken', message))
    const schemas = studentSchemas(variant.namespace, variant.tag.name)
    const notFound = (id: number) => fastify.httpErrors.notFound(`Student ${id} not found`)
    const kind: FollowedKind<Student> = { resource: 'student', lock: students.lock, notFound }
    const batchKind: BatchKind<Student, StudentInput> = { resource: 'student', insertion: students.batchInsertion, unique: students.uniqueEmail }

    fastify.get('/', { schema: schemas.index(variant.bulk) }, async (request, reply) => {
      const list = fastify.lists.request(request, studentListFields)
      const format = variant.bulk ? fastify.lists.exportFormat(request) : undefined
      if (format !== undefined) return fastify.lists.sendExport(request, reply, timeoutMs => students.export(list, format, timeoutMs), format, 'students')
      return fastify.lists.send(reply, list, await students.query(list), { path: fastify.prefix })
    })

    fastify.get('/:id', { schema: schemas.show }, async (request, reply) => {
      const student = await students.find(request.params.id)
      if (!student) throw notFound(request.params.id)
      return reply.sendTagged(versionTag(student.version), student)
    })

    fastify.post('/', { schema: schemas.store }, async (request, reply) => {
      return request.insertRecord(reply, kind, students.insertion(request.body), student =>
        ({ body: student, location: `${fastify.prefix}/${student.id}` }))
    })

    if (variant.bulk) {
      fastify.post('/batch', { schema: schemas.batch, bodyLimit: BATCH_BODY_LIMIT }, async (request, reply) => {
        return request.insertRecords(reply, batchKind, request.body, request.query.mode, outcomes => outcomes)
      })
      const fileRoutes: FastifyPluginAsyncTypebox = async (files) => {
        acceptImportFiles(files)
        files.post('/import', { schema: schemas.import }, async (request, reply) => {
          return request.importRecords(reply, students.importKind, request.query.on_conflict, result => result)
        })
      }
      await fastify.register(fileRoutes)
    }

    const methods = variant.patch ? ['PUT', 'PATCH'] as const : ['PUT'] as const
    for (const method of methods) {
      fastify.route({
        method,
        url: '/:id',
        schema: schemas.update(variant.update, method),
        handler: async (request, reply) => {
          const { id } = request.params
          return request.updateRecord(reply, kind, id, trx => students.update(id, request.body, trx))
        }
      })
    }

    fastify.delete('/:id', { schema: schemas.destroy }, async (request, reply) => {
      const { id } = request.params
      await request.deleteRecord(kind, id, trx => students.remove(id, trx))
      return reply.code(204).send(null)
    })
  }
}
