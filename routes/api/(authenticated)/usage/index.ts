import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { InvalidFields } from '../../../../lib/http/invalid-fields.js'
import { dayEnd } from '../../../../lib/limits/rate-leases.js'
import { keyPolicy, namedPolicy, type RatePolicy } from '../../../../lib/limits/rate-policy.js'
import type { Allowance } from '../../../../plugins/app/rate-limits.js'
import { usageSchemas, usageSharedSchemas, usageTag, type Usage, type UsageQuery } from './schema.js'

/** The policy as the usage shows it: each part with its name in the RateLimit fields. */
const shown = (policy: RatePolicy): Usage['policy'] => ({
  rate: policy.rate && { name: policy.name, count: policy.rate.count, window_seconds: policy.rate.windowSeconds },
  quota: policy.quota === null ? null : { name: policy.quotaName, count: policy.quota }
})

/**
 * `GET /api/usage`: a caller's rate limit and daily quota, and what is left of them
 * (plugins/app/rate-limits.ts); another user's, or an API key's own.
 */
const usage: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: usageTag, schemas: usageSharedSchemas })
  const { notFound } = fastify.httpErrors

  /** The allowance the request asks about, once the caller may read it. */
  async function allowanceAsked (request: FastifyRequest, { user_id: userId, key_id: keyId }: UsageQuery): Promise<Allowance> {
    if (keyId !== undefined && userId !== undefined) throw new InvalidFields({ key_id: ['cannot be asked with user_id'] }, 'query string')
    if (keyId !== undefined) {
      // Another user's key is told apart from none only to a caller who may read their usage:
      // to another, any key not found among their own is refused alike, before it is looked for.
      const mayReadOthers = request.user.permissions.has('user-list')
      const key = await fastify.knex('api_keys').where({ id: keyId }).whereNull('revoked_at')
        .modify(keys => { if (!mayReadOthers) keys.where({ user_id: request.user.id }) })
        .first('user_id', 'rate_limit', 'rate_quota')
      if (key === undefined && !mayReadOthers) await fastify.can('user-list')(request)
      if (key === undefined) throw notFound(`API key ${keyId} not found`)
      return { caller: `key:${keyId}`, policy: keyPolicy(key) ?? namedPolicy('key', null, null) }
    }
    if (userId === undefined || userId === request.user.id) return { caller: `user:${request.user.id}`, policy: request.user.policy }
    await fastify.can('user-list')(request)
    const user = await fastify.knex('users').where({ id: userId }).whereNull('deleted_at').first('id')
    if (user === undefined) throw notFound(`User ${userId} not found`)
    return { caller: `user:${userId}`, policy: await fastify.rateLimits.policyOf(userId) }
  }

  fastify.get('/', { schema: usageSchemas.show }, async (request) => {
    const allowance = await allowanceAsked(request, request.query)
    const standing = await fastify.rateLimits.usage(allowance)
    const data: Usage = {
      policy: shown(allowance.policy),
      rate: standing.rate === undefined ? null : { remaining: standing.rate.remaining, reset_seconds: standing.rate.reset ?? null },
      quota: standing.quota === undefined
        ? null
        : { used: standing.used, remaining: standing.quota.remaining, resets_at: new Date(dayEnd(fastify.rateLimits.leases.now())).toISOString() }
    }
    return { success: true as const, data }
  })
}

export default usage
