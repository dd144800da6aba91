import { readFile } from 'node:fs/promises'
import path from 'node:path'
import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, IdParams } from '../../../../../schemas/common.js'

/** A file that is not there, as a route's bug might read. */
const MISSING_FILE = path.join(import.meta.dirname, 'not-there.json')

/**
 * Routes of the error tests only (test/plugins/app/errors.test.ts): writes a foreign key of
 * the test's own tables refuses, and a read of a missing file. In the test app's OpenAPI
 * document, so that their answers are held to it as every other.
 */
const faults: FastifyPluginAsyncTypebox = async (fastify) => {
  const tags = ['faults']
  fastify.delete('/parents/:id', {
    schema: { tags, operationId: 'faults.parents.destroy', params: IdParams, response: { 204: Type.Null({ description: 'Deleted' }), ...errorResponses(400, 409) } }
  }, async (request, reply) => {
    await fastify.knex('fault_parents').where({ id: request.params.id }).delete()
    return reply.code(204).send(null)
  })

  fastify.post('/children', {
    schema: {
      tags,
      operationId: 'faults.children.store',
      body: Type.Object({ parent_id: Type.Integer() }, { additionalProperties: false }),
      response: { 204: Type.Null({ description: 'Created' }), ...errorResponses(400, 409, 413, 415) }
    }
  }, async (request, reply) => {
    await fastify.knex('fault_children').insert({ parent_id: request.body.parent_id })
    return reply.code(204).send(null)
  })

  fastify.get('/file', {
    schema: { tags, operationId: 'faults.file', response: { 200: Type.Object({}, { description: 'The file' }), ...errorResponses() } }
  }, async () => JSON.parse(await readFile(MISSING_FILE, 'utf8')) as object)
}

export default faults
