import fp from 'fastify-plugin'
import { commonSchemas } from '../schemas/common.js'
import { studentSchemas } from '../schemas/students.js'
import { clientSharedSchemas } from '../routes/api/(authenticated)/clients/schema.js'
import { roleSharedSchemas } from '../routes/api/(authenticated)/roles/schema.js'
import { userSharedSchemas } from '../routes/api/(authenticated)/users/schema.js'
import { accountSharedSchemas } from '../routes/api/(authenticated)/schema.js'

/** Schemas shared by several routes, referenced by $id: named components in the OpenAPI document. */
export default fp(async (fastify) => {
  for (const schema of [...commonSchemas, ...studentSchemas, ...clientSharedSchemas, ...roleSharedSchemas, ...userSharedSchemas, ...accountSharedSchemas]) fastify.addSchema(schema)
}, { name: 'schemas' })
