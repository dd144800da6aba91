import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../lib/http/list-query.js'
import { MAX_POSITION } from '../../../../lib/http/limits.js'
import { SECRET_PATTERN } from '../../../../lib/webhooks/signatures.js'
import { AtLeastOneOf, Envelope, errorResponses, IdParams, ListResponse, NotModified, ReadHeaders, Tagged, Timestamp, TOKEN_OR_KEY, WriteHeaders } from '../../../../schemas/common.js'
import { EVENT_TYPE_PATTERN } from '../events/schema.js'

export const webhooksTag = { name: 'webhooks', description: 'Webhooks: the change feed\'s events POSTed to an endpoint, signed, retried until it answers 2xx' }
// Managed with an access token or a key holding webhook-*, as the other resources.
const auth = { tags: [webhooksTag.name], security: TOKEN_OR_KEY }

const webhookFields = {
  url: Type.String({ format: 'uri', maxLength: 2048, description: 'Where the events are POSTed: http or https, no credentials, a host that resolves to public addresses (unless WEBHOOK_ALLOW_PRIVATE)', example: 'https://hooks.example.com/students' }),
  types: Type.Array(Type.String({ pattern: EVENT_TYPE_PATTERN }), {
    minItems: 1,
    maxItems: 100,
    uniqueItems: true,
    description: 'The event types it receives (`student.created`, …): of resources the caller may list (`client-list` for `client.*`)',
    example: ['student.created', 'student.updated', 'student.deleted']
  }),
  description: Type.String({ maxLength: 500, description: 'What it is for', example: 'the timetable system' })
}

export const Webhook = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  url: webhookFields.url,
  types: webhookFields.types,
  description: webhookFields.description,
  enabled: Type.Boolean({ description: 'Whether events go to it: false once disabled, by hand or for failing WEBHOOK_DISABLE_AFTER (5 days); events meanwhile are not queued for it' }),
  disabled_reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it was disabled by the service; null otherwise' }),
  failing_since: Type.Union([Timestamp, Type.Null()], { description: 'When its deliveries began to fail, none succeeding since; null while they succeed' }),
  previous_secret_until: Type.Union([Timestamp, Type.Null()], { description: 'After a rotation, until when the previous secret signs too; null otherwise' }),
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Webhook', additionalProperties: false })
export type Webhook = Static<typeof Webhook>

export const WebhookInput = Type.Object({
  url: webhookFields.url,
  types: webhookFields.types,
  description: Type.Optional(webhookFields.description)
}, { $id: 'WebhookInput', additionalProperties: false })
export type WebhookInput = Static<typeof WebhookInput>

const WebhookChange = AtLeastOneOf(Type.Object({
  ...webhookFields,
  enabled: Type.Boolean({ description: 'false stops its deliveries; true starts them again (its failing time cleared), for the events from then on and the deliveries still pending' })
}))
export type WebhookChange = Static<typeof WebhookChange>

const Secret = Type.String({ pattern: SECRET_PATTERN, description: 'The signing secret, for checking `webhook-signature` (Standard Webhooks): shown this once', example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw+JM3L06IWNE=' })

const WithSecret = (description: string, headers: object = {}) => Type.Object({
  success: Type.Literal(true),
  data: Type.Ref(Webhook),
  secret: Secret,
  message: Type.String()
}, { additionalProperties: false, description, headers })

export const Attempt = Type.Object({
  attempted_at: Timestamp,
  status: Type.Union([Type.Integer(), Type.Null()], { description: 'The answer\'s status; null if none came' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'Why it did not count: the status, a timeout, a refused connection, an address not allowed' }),
  duration_ms: Type.Integer({ minimum: 0 }),
  response: Type.String({ description: 'The first KB of the answer\'s body' })
}, { $id: 'WebhookAttempt', additionalProperties: false })

export const Delivery = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  event_id: Type.Integer({ minimum: 1, description: 'The event delivered (GET /api/events), and the `webhook-id` of each attempt' }),
  state: Type.Union([Type.Literal('pending'), Type.Literal('delivered'), Type.Literal('failed')], { description: '`pending` until an attempt gets a 2xx (`delivered`) or WEBHOOK_RETRY_FOR (3 days) has passed (`failed`)' }),
  next_attempt_at: Type.Union([Timestamp, Type.Null()], { description: 'When it is tried next, while pending' }),
  created_at: Timestamp,
  attempts: Type.Array(Type.Ref(Attempt), { description: 'Its attempts, the oldest first (the last 50)' })
}, { $id: 'WebhookDelivery', additionalProperties: false })
export type Delivery = Static<typeof Delivery>

/** What lists of deliveries filter and sort on. */
export const deliveryListFields: ListFields = {
  id: { type: 'bigint', column: 'id', sortable: true },
  event_id: { type: 'bigint', column: 'event_id', operators: ['eq', 'in'] },
  state: { type: 'text', column: 'state', operators: ['eq', 'in'] },
  created_at: { type: 'timestamp', column: 'created_at', operators: ['gt', 'gte', 'lt', 'lte'] }
}
/** The newest first: a log. */
export const DELIVERY_ORDER = ['-id'] as const

const DeliveryParams = Type.Object({
  id: IdParams.properties.id,
  delivery: Type.Integer({ minimum: 1, maximum: MAX_POSITION, description: 'The delivery\'s id' })
})

const WebhookEnvelope = Envelope(Type.Ref(Webhook))

export const webhookSchemas = {
  index: {
    ...auth,
    operationId: 'webhooks.index',
    summary: 'List webhooks',
    description: 'Every webhook, in id order; never their secrets. Needs webhook-list.',
    response: { 200: Envelope(Type.Array(Type.Ref(Webhook)), { description: 'The webhooks' }), ...errorResponses(401, 403) }
  },
  show: {
    ...auth,
    operationId: 'webhooks.show',
    summary: 'Get one webhook',
    description: 'Needs webhook-list.',
    params: IdParams,
    headers: ReadHeaders,
    response: { 200: Tagged(WebhookEnvelope, 'The webhook'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  store: {
    ...auth,
    operationId: 'webhooks.store',
    summary: 'Make a webhook',
    description: 'It receives the events of its types that come after it in the feed, each POSTed as GET /api/events shows it, signed by the Standard Webhooks specification (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with the secret answered this once. ' +
      'Needs webhook-create and event-list (as does a change of its `url` or `types`, with webhook-edit). Its URL is refused (400) when it is not http or https, holds credentials, or resolves to a loopback, private, link-local or other non-public address (unless WEBHOOK_ALLOW_PRIVATE); each delivery resolves it and checks the address again (a host that does not resolve yet is taken, and its deliveries fail until it does). Types of a resource the caller may not list are 403. Not replayed by `Idempotency-Key`: a secret is never answered twice.',
    body: Type.Ref(WebhookInput),
    response: { 201: WithSecret('The webhook made, and its secret', { location: Type.String({ description: 'The webhook\'s address' }), etag: Type.String() }), ...errorResponses(400, 401, 403, 413, 415) }
  },
  update: {
    ...auth,
    operationId: 'webhooks.patch',
    summary: 'Change a webhook',
    description: 'Takes at least one field; the others keep their values. `enabled: true` starts a disabled webhook again. Needs webhook-edit.',
    params: IdParams,
    headers: WriteHeaders,
    body: WebhookChange,
    response: { 200: Tagged(WebhookEnvelope, 'The webhook as changed'), ...errorResponses(400, 401, 403, 404, 412, 413, 415, 428) }
  },
  destroy: {
    ...auth,
    operationId: 'webhooks.destroy',
    summary: 'Delete a webhook',
    description: 'Its deliveries, pending ones too, go with it. Needs webhook-delete.',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: Envelope(Type.Ref(Webhook), { description: 'The deleted webhook' }), ...errorResponses(400, 401, 403, 404, 412, 428) }
  },
  rotateSecret: {
    ...auth,
    operationId: 'webhooks.rotateSecret',
    summary: 'Give a webhook a new signing secret',
    description: 'Answers the new secret this once. For 24 hours the previous one signs beside it (`webhook-signature` holds a signature by each), so that receivers can change over without missing a delivery; a second rotation meanwhile ends the first one\'s. Needs webhook-edit.',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: WithSecret('The webhook, and its new secret', { etag: Type.String() }), ...errorResponses(400, 401, 403, 404, 412, 428) }
  },
  deliveries: {
    ...auth,
    operationId: 'webhooks.deliveries',
    summary: 'List a webhook\'s deliveries',
    description: 'Its deliveries, the newest first, each with its attempts, filtered as asked, `limit` at a time (default 100, at most 1000). Kept while their event is (EVENTS_RETENTION). Needs webhook-list.',
    params: IdParams,
    querystring: listQuerySchema(deliveryListFields, DELIVERY_ORDER, MAX_POSITION),
    headers: ReadHeaders,
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(Delivery))), 'One page of deliveries'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  retry: {
    ...auth,
    operationId: 'webhooks.retryDelivery',
    summary: 'Send a delivery again',
    description: 'Makes the delivery pending and due at once, whatever its state: it is sent within a second (one attempt, and more while WEBHOOK_RETRY_FOR since its event lasts), with the same `webhook-id`. 202: the attempt shows in its log. 409 while an attempt of it is under way, or while its webhook is disabled. Needs webhook-edit.',
    params: DeliveryParams,
    response: { 202: Envelope(Type.Ref(Delivery), { description: 'The delivery, pending' }), ...errorResponses(400, 401, 403, 404, 409) }
  }
}

export const webhookSharedSchemas = [WebhookInput, Webhook, Attempt, Delivery]
