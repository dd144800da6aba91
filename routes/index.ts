import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { DOCUMENTATION_PATH, TITLE } from '../lib/http/documentation.js'
import { packageInfo } from '../lib/process/package-info.js'
import { Service, serviceSchemas, serviceTag } from './schema.js'

/** `GET /`: a newcomer who opens the service's address finds the way to its documentation. */
const service: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: serviceTag, schemas: [Service] })
  const answer = {
    success: true as const,
    data: {
      name: TITLE,
      version: packageInfo.version,
      links: { documentation: DOCUMENTATION_PATH, openapi: `${DOCUMENTATION_PATH}/json`, health: '/health/ready' }
    }
  }
  fastify.get('/', { schema: serviceSchemas.index }, async () => answer)
}

export default service
