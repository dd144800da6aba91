import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { dayEnd } from '../../../../lib/limits/rate-leases.js'
import { usageSchemas, usageSharedSchemas, usageTag, type Usage } from './schema.js'

/** `GET /api/usage`: a caller's rate limit and daily quota, and what is left of them (plugins/app/rate-limits.ts). */
const usage: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: usageTag, schemas: usageSharedSchemas })
  const { policy } = fastify.rateLimits

  fastify.get('/', { schema: usageSchemas.show }, async (request) => {
    const userId = request.query.user_id ?? request.user.id
    if (userId !== request.user.id) {
      await fastify.can('user-list')(request)
      const user = await fastify.knex('users').where({ id: userId }).whereNull('deleted_at').first('id')
      if (user === undefined) throw fastify.httpErrors.notFound(`User ${userId} not found`)
    }
    const standing = await fastify.rateLimits.usage(`user:${userId}`)
    const data: Usage = {
      policy: { name: policy.name, rate: policy.rate && { count: policy.rate.count, window_seconds: policy.rate.windowSeconds }, quota: policy.quota },
      rate: standing.rate === undefined ? null : { remaining: standing.rate.remaining, reset_seconds: standing.rate.reset ?? null },
      quota: standing.quota === undefined
        ? null
        : { used: standing.used, remaining: standing.quota.remaining, resets_at: new Date(dayEnd(fastify.rateLimits.leases.now())).toISOString() }
    }
    return { success: true as const, data }
  })
}

export default usage
