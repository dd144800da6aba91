import fp from 'fastify-plugin'
import { commonSchemas } from '../../schemas/common.js'

/**
 * The schemas every resource may reference by $id (the error body, ...): named components in
 * the OpenAPI document. A resource's own are declared by its folder (fastify.declareResource).
 */
export default fp(async (fastify) => {
  for (const schema of commonSchemas) fastify.addSchema(schema)
}, { name: 'schemas' })
