import { Type, type Static } from '@sinclair/typebox'
import { Envelope, errorResponses, IdParams, Timestamp } from '../../../../schemas/common.js'

export const sessionsTag = { name: 'sessions', description: 'The caller\'s sessions: where they are logged in, and ending one' }
const auth = { tags: [sessionsTag.name], security: [{ bearerAuth: [] }] }

export const Session = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  created_at: Timestamp,
  last_used_at: { ...Timestamp, description: 'When a token of the session was last used or refreshed; written at most once a minute' },
  expires_at: { ...Timestamp, description: 'When the session ends at the latest (SESSION_MAX_AGE after its login)' },
  user_agent: Type.Union([Type.String(), Type.Null()], { description: 'The User-Agent of the login' }),
  ip: Type.Union([Type.String(), Type.Null()], { description: 'The client\'s address at the login, as the audit log has it (TRUST_PROXY)' }),
  current: Type.Boolean({ description: 'Whether the token of this request is of this session' })
}, { $id: 'Session', additionalProperties: false })
export type Session = Static<typeof Session>

export const sessionSchemas = {
  index: {
    ...auth,
    operationId: 'sessions.index',
    summary: 'List the caller\'s sessions',
    description: 'Every live session of the caller, the most recently used first, in one answer, not paged: a login past 100 live sessions ends the oldest, so there are never more.',
    response: { 200: Envelope(Type.Array(Type.Ref(Session)), { description: 'The caller\'s live sessions' }), ...errorResponses(401, 403) }
  },
  destroy: {
    ...auth,
    operationId: 'sessions.destroy',
    summary: 'End one of the caller\'s sessions',
    description: 'The session ends at once: its access tokens are refused on the next request, on every instance, and its refresh token gets no new pair. A session of another user, or one that has ended, is 404. Takes no `If-Match` (the header is ignored, and `REQUIRE_IF_MATCH` does not apply): no read gives a session a tag, and ending one loses no one\'s change.',
    params: IdParams,
    response: { 200: Envelope(Type.Ref(Session), { description: 'The ended session' }), ...errorResponses(400, 401, 403, 404) }
  }
}

export const sessionSharedSchemas = [Session]
