import { Type, type Static } from '@sinclair/typebox'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { Envelope, errorResponses, TOKEN_OR_KEY, Timestamp } from '../../../../schemas/common.js'

export const usageTag = { name: 'usage', description: 'Rate limits and daily quotas: what a caller may spend, and what is left' }

export const Usage = Type.Object({
  policy: Type.Object({
    name: Type.String({ description: 'The policy\'s name, as the `RateLimit-Policy` and `RateLimit` fields give it', example: 'default' }),
    rate: Type.Union([Type.Object({
      count: Type.Integer({ minimum: 1, description: 'Units a window: the bucket\'s size, which a burst may spend at once', example: 600 }),
      window_seconds: Type.Integer({ minimum: 1, description: 'The window: the bucket refills evenly over it', example: 60 })
    }, { additionalProperties: false }), Type.Null()], { description: 'The rate limit (RATE_LIMIT); null: none' }),
    quota: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description: 'Units a UTC day (RATE_QUOTA); null: none', example: 10000 })
  }, { additionalProperties: false }),
  rate: Type.Union([Type.Object({
    remaining: Type.Integer({ minimum: 0, description: 'Units left in the bucket' }),
    reset_seconds: Type.Union([Type.Integer({ minimum: 0 }), Type.Null()], { description: 'Seconds until the next unit is in; null while the bucket is full' })
  }, { additionalProperties: false }), Type.Null()], { description: 'Null without a rate limit' }),
  quota: Type.Union([Type.Object({
    used: Type.Integer({ minimum: 0, description: 'Units used this UTC day' }),
    remaining: Type.Integer({ minimum: 0, description: 'Units left this UTC day' }),
    resets_at: { ...Timestamp, description: 'The end of the UTC day, when the quota is whole again' }
  }, { additionalProperties: false }), Type.Null()], { description: 'Null without a daily quota' })
}, { $id: 'Usage', additionalProperties: false, description: 'Units an instance has taken ahead for the caller\'s next requests count as spent until they are used, or given back (within about 6 s of the caller\'s last request there)' })
export type Usage = Static<typeof Usage>

export const usageSchemas = {
  show: {
    tags: [usageTag.name],
    security: TOKEN_OR_KEY,
    operationId: 'usage.show',
    summary: 'What the caller may spend, and what is left',
    description: 'The caller\'s policy and what is left of its rate limit and daily quota; with `user_id`, that user\'s, for a caller holding `user-list`. A token and the API keys of a user spend one allowance, the user\'s. This request costs a unit, as any does.',
    querystring: Type.Object({
      user_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'Another user, whose usage a caller holding `user-list` may read' }))
    }, { additionalProperties: false }),
    response: { 200: Envelope(Type.Ref(Usage), { description: 'The policy and what is left of it' }), ...errorResponses(400, 401, 403, 404) }
  }
}

export const usageSharedSchemas = [Usage]
