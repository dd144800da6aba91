import { Type, type Static } from '@sinclair/typebox'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { Envelope, errorResponses, TOKEN_OR_KEY, Timestamp } from '../../../../schemas/common.js'

export const usageTag = { name: 'usage', description: 'Rate limits and daily quotas: what a caller may spend, and what is left' }

export const Usage = Type.Object({
  policy: Type.Object({
    rate: Type.Union([Type.Object({
      name: Type.String({ description: 'Its name in the `RateLimit-Policy` and `RateLimit` fields: `default`, a role\'s, `key`', example: 'default' }),
      count: Type.Integer({ minimum: 1, description: 'Units a window: the bucket\'s size, which a burst may spend at once', example: 600 }),
      window_seconds: Type.Integer({ minimum: 1, description: 'The window: the bucket refills evenly over it', example: 60 })
    }, { additionalProperties: false }), Type.Null()], { description: 'The rate limit; null: none' }),
    quota: Type.Union([Type.Object({
      name: Type.String({ description: 'Its name in the fields: `default-daily`, a role\'s, `key-daily`', example: 'default-daily' }),
      count: Type.Integer({ minimum: 1, description: 'Units a UTC day', example: 10000 })
    }, { additionalProperties: false }), Type.Null()], { description: 'The daily quota; null: none' })
  }, { additionalProperties: false, description: 'A user\'s: the most generous of their roles\' (RATE_LIMIT and RATE_QUOTA for a role of none, or a user of no role); a key\'s: its own, spent beside its owner\'s' }),
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

export const UsageQuery = Type.Object({
  user_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'Another user, whose usage a caller holding `user-list` may read' })),
  key_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'An API key not revoked, whose own policy and what is left of it are read: the caller\'s own, or, holding `user-list`, another user\'s (without it, a key not among the caller\'s live ones is 403, whoever\'s it is or if none is). Not with `user_id`' }))
}, { additionalProperties: false })
export type UsageQuery = Static<typeof UsageQuery>

export const usageSchemas = {
  show: {
    tags: [usageTag.name],
    security: TOKEN_OR_KEY,
    operationId: 'usage.show',
    summary: 'What the caller may spend, and what is left',
    description: 'The caller\'s policy and what is left of its rate limit and daily quota; with `user_id`, that user\'s, for a caller holding `user-list`. A token and the API keys of a user spend one allowance, the user\'s; a key with a policy of its own spends its own too, which `key_id` reads (its parts null for a key of none). This request costs a unit, as any does.',
    querystring: UsageQuery,
    response: { 200: Envelope(Type.Ref(Usage), { description: 'The policy and what is left of it' }), ...errorResponses(400, 401, 403, 404) }
  }
}

export const usageSharedSchemas = [Usage]
