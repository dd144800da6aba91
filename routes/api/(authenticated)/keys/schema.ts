import { Type } from '@sinclair/typebox'
import { CurrentPassword, AtLeastOneOf, Envelope, errorResponses, IdParams, Timestamp } from '../../../../schemas/common.js'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { timestampInput } from '../../../../lib/http/timestamps.js'
import { API_KEY_PATTERN } from '../../../../lib/auth/api-keys.js'
import { policyFields } from '../roles/schema.js'

export const keysTag = { name: 'keys', description: 'API keys: secrets for machine clients, each with permissions of its own' }
// Managed with an access token only: a key makes no keys (no chains of keys).
const auth = { tags: [keysTag.name], security: [{ bearerAuth: [] }] }

const PermissionNames = Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
  maxItems: 100,
  uniqueItems: true,
  description: 'Names of permissions (GET /api/permissions). At every request the key may do what these allow and its owner may still do.',
  example: ['client-list', 'client-create']
})

export const ApiKey = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  user_id: Type.Integer({ minimum: 1, description: 'The key\'s owner' }),
  name: Type.String(),
  prefix: Type.String({ description: 'The secret\'s first 11 characters, to tell keys apart', example: 'sk_4Gx0aQ2b' }),
  permissions: PermissionNames,
  created_at: Timestamp,
  expires_at: Type.Union([Timestamp, Type.Null()], { description: 'When the key stops working; null if it does not expire' }),
  last_used_at: Type.Union([Timestamp, Type.Null()], { description: 'When the key was last used; written at most once a minute' }),
  rate_limit: Type.Union([Type.String(), Type.Null()], { description: 'The key\'s own rate limit, spent beside its owner\'s; null: its owner\'s alone' }),
  rate_quota: Type.Union([Type.String(), Type.Null()], { description: 'The key\'s own daily quota, spent beside its owner\'s; null: its owner\'s alone' })
}, { $id: 'ApiKey', additionalProperties: false })

/** A key's own policy, never above its owner's (400 otherwise): what the key spends beside its owner's allowance. */
const keyPolicyFields = policyFields(false)

export const NewApiKey = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, description: 'What the key is for', example: 'nightly export' }),
  permissions: PermissionNames,
  expires_at: Type.Optional(timestampInput({ description: 'When the key stops working, in the future (an offset within ±15:59); without it, never', example: '2036-06-30T00:00:00Z' })),
  current_password: CurrentPassword('needed to make a key: an access token alone makes none'),
  rate_limit: Type.Optional(keyPolicyFields.rate_limit),
  rate_quota: Type.Optional(keyPolicyFields.rate_quota)
}, { $id: 'NewApiKey', additionalProperties: false })

export const ApiKeyChange = AtLeastOneOf(Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, description: 'What the key is for', example: 'nightly export' }),
  ...keyPolicyFields
}), { $id: 'ApiKeyChange' })

const CreatedKey = Type.Object({
  success: Type.Literal(true),
  data: Type.Ref(ApiKey),
  secret: Type.String({ pattern: `^${API_KEY_PATTERN}$`, description: 'The key itself, for `Authorization: Bearer <secret>`: shown this once, kept nowhere' }),
  message: Type.String()
}, { additionalProperties: false, description: 'The key made, and its secret', headers: { location: Type.String({ description: 'The keys\' list' }) } })

export const keySchemas = {
  index: {
    ...auth,
    operationId: 'keys.index',
    summary: 'List API keys',
    description: 'The caller\'s keys not revoked (expired ones too), the newest first; never their secrets. With `user_id`, another user\'s: this needs `user-edit` and every permission that user holds.',
    querystring: Type.Object({
      user_id: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'Whose keys; the caller\'s without it' }))
    }),
    response: { 200: Envelope(Type.Array(Type.Ref(ApiKey)), { description: 'The keys' }), ...errorResponses(400, 401, 403) }
  },
  store: {
    ...auth,
    operationId: 'keys.store',
    summary: 'Make an API key',
    description: 'Answers the key\'s secret this once. Needs the caller\'s `current_password`, or a session reauthenticated in the last 5 minutes (POST /api/profile/reauthenticate): a wrong one is 401 and counts as a failed login ' +
      '(rate limited per client IP and per e-mail address with logins, 429 with Retry-After). Its permissions must be ones the caller holds (403 otherwise). A key may carry a rate limit and a daily quota of its own, never above the caller\'s (400). A key authenticates as `Authorization: Bearer sk_…` on every route its permissions allow, but cannot manage keys, sessions or the profile. Not replayed by `Idempotency-Key`: a secret is never stored to be answered again.',
    body: Type.Ref(NewApiKey),
    response: { 201: CreatedKey, ...errorResponses(400, 401, 403, 413, 415, 429) }
  },
  update: {
    ...auth,
    operationId: 'keys.patch',
    summary: 'Rename an API key, or change its policy',
    description: 'Sets the key\'s name, or its own rate limit and daily quota (null: none of its own), which it spends beside its owner\'s allowance: never more than its owner\'s (400, for the parts the request sets). Holds from the key\'s next request on (within a second on other instances), starting from the units the old one left, never more than its count (units that instances took ahead under the old one are not given back to it); audited. Another user\'s key needs `user-edit` and every permission its owner holds; without `user-edit` it is 404. Takes no `If-Match`, as a revoke takes none.',
    params: IdParams,
    body: Type.Ref(ApiKeyChange),
    response: { 200: Envelope(Type.Ref(ApiKey), { description: 'The key as changed' }), ...errorResponses(400, 401, 403, 404, 413, 415) }
  },
  destroy: {
    ...auth,
    operationId: 'keys.destroy',
    summary: 'Revoke an API key',
    description: 'The key is refused from the next request on (within a second on other instances). Another user\'s key needs `user-edit` and every permission its owner holds; without `user-edit` it is 404. Takes no `If-Match` (the header is ignored, and `REQUIRE_IF_MATCH` does not apply): no read gives a key a tag, and revoking one loses no one\'s change. A password set by someone else, a `user-edit` holder\'s change of the owner\'s password (or `npm run reset-password`), revokes every key of the owner.',
    params: IdParams,
    response: { 200: Envelope(Type.Ref(ApiKey), { description: 'The revoked key' }), ...errorResponses(400, 401, 403, 404) }
  }
}

export const keySharedSchemas = [ApiKey, NewApiKey, ApiKeyChange]
