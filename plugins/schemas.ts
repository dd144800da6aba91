import fp from 'fastify-plugin'
import { commonSchemas } from '../schemas/common.js'
import { studentSchemas } from '../schemas/students.js'

/** Schemas shared by several routes, referenced by $id: named components in the OpenAPI document. */
export default fp(async (fastify) => {
  for (const schema of [...commonSchemas, ...studentSchemas]) fastify.addSchema(schema)
}, { name: 'schemas' })
