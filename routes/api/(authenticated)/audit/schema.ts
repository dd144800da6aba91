import { Type } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../lib/http/list-query.js'
import { MAX_POSITION } from '../../../../lib/http/limits.js'
import { Envelope, errorResponses, ListResponse, NotModified, ReadHeaders, Timestamp, TOKEN_OR_KEY } from '../../../../schemas/common.js'
import { AUDIT_ACTIONS } from '../../../../plugins/app/audit.js'

export const auditTag = { name: 'audit', description: 'The audit log: one entry per change to users, roles, clients, API keys and sessions' }

const Id = (description: string) => Type.Union([Type.Integer({ minimum: 1 }), Type.Null()], { description })
const Fields = (description: string) => Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()], { description })

export const AuditEntry = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  at: { ...Timestamp, description: 'When the transaction of the change began' },
  actor_id: Id('The user who acted; null for a caller without a token (a failed login, a refresh token spent again)'),
  key_id: Id('The API key they acted through, if any'),
  session_id: Id('The session they acted in, if any'),
  ip: Type.Union([Type.String(), Type.Null()], { description: 'The client\'s address: the connection\'s, or, from a proxy named in TRUST_PROXY, the right-most X-Forwarded-For address that is not a trusted proxy\'s' }),
  request_id: Type.Union([Type.String(), Type.Null()], { description: 'The request\'s id, as its log lines and its `X-Request-Id` carry it' }),
  action: Type.Union(AUDIT_ACTIONS.map(action => Type.Literal(action)), { description: 'What was done: `retry` is a webhook delivery sent again by hand, `disable` a webhook the service disabled' }),
  // A string, not an enum: a resource added to the service is audited with no change here.
  resource: Type.String({ description: 'To what: `student`, `client`, `role`, `user`, `key`, `session`, `webhook`, `webhook_delivery`, or a resource added since', examples: ['student'] }),
  resource_id: Id('Its id; null for a failed login'),
  before: Fields('Of an update, the fields that changed as they were; of a delete or a revoke, the whole record; a secret (`password`) shows as `[redacted]`'),
  after: Fields('Of an update, the fields that changed as they became; of a create, the whole record; of a session\'s event, what it was')
}, { $id: 'AuditEntry', additionalProperties: false })

/** What lists of audit entries filter and sort on. */
export const auditListFields: ListFields = {
  id: { type: 'bigint', column: 'id', sortable: true },
  at: { type: 'timestamp', column: 'at', sortable: true, operators: ['gt', 'gte', 'lt', 'lte'], description: 'the time of the change' },
  actor_id: { type: 'integer', column: 'actor_id', operators: ['eq', 'in'], description: 'the user who acted' },
  key_id: { type: 'integer', column: 'key_id', operators: ['eq', 'in'] },
  session_id: { type: 'integer', column: 'session_id', operators: ['eq', 'in'] },
  ip: { type: 'text', column: 'ip', operators: ['eq', 'in', 'starts_with'] },
  request_id: { type: 'text', column: 'request_id', operators: ['eq'] },
  action: { type: 'text', column: 'action', operators: ['eq', 'ne', 'in'] },
  resource: { type: 'text', column: 'resource', operators: ['eq', 'ne', 'in'] },
  resource_id: { type: 'integer', column: 'resource_id', operators: ['eq', 'in'] }
}

/** Newest first, unless asked otherwise. */
export const AUDIT_ORDER = ['-id']

export const auditSchemas = {
  index: {
    tags: [auditTag.name],
    security: TOKEN_OR_KEY,
    operationId: 'audit.index',
    summary: 'List audit entries',
    description: 'Newest first unless `sort` or `after` says otherwise, filtered as asked, `limit` at a time (default 100, at most 1000); needs audit-list. Nothing changes or deletes an entry but the sweep of those older than AUDIT_RETENTION. A page shows only entries whose ids no transaction still in flight could come before (it waits for those to end), so a reader that follows `next` in id order (`sort=id`, or the default newest first) skips none; `at` is when the change\'s transaction began, and a page in `at` order may be followed by an entry of an earlier time.',
    querystring: listQuerySchema(auditListFields, AUDIT_ORDER, MAX_POSITION),
    headers: ReadHeaders,
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(AuditEntry))), 'One page of audit entries'), 304: NotModified, ...errorResponses(400, 401, 403) }
  }
}

export const auditSharedSchemas = [AuditEntry]
