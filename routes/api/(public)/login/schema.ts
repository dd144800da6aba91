import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../../../schemas/common.js'
import { MAILED_TOKEN_PATTERN } from '../../../../lib/auth/mailed-tokens.js'
import { RECOVERY_CODE_PATTERN, TOTP_CODE_PATTERN } from '../../../../lib/auth/totp.js'
import { authTag } from '../schema.js'

export const loginSchemas = {
  mfa: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.loginMfa',
    summary: 'Complete a login with the second factor',
    description: 'Takes the `mfa_token` of a login that answered `mfa_required`, and one of: `code`, the 6 digits the authenticator app shows (of now, or 30 s either side; ' +
      'a code, or one before it, accepted once is not accepted again), or `recovery_code`, one of the codes shown at enrolment (each works once). ' +
      'Starts the session: answers its tokens, as login does. A wrong code is 401 `invalid_mfa_code`; the fifth spends the `mfa_token`. A token unknown, expired (5 minutes), spent, ' +
      'or of a password changed since is 401 `invalid_mfa_token`: log in again. Rate limited per client IP (429 with Retry-After).',
    body: Type.Object({
      mfa_token: Type.String({ pattern: MAILED_TOKEN_PATTERN, writeOnly: true, description: 'The token of the login\'s answer' }),
      code: Type.Optional(Type.String({ pattern: TOTP_CODE_PATTERN, writeOnly: true, description: 'The authenticator app\'s code; or send `recovery_code`' })),
      recovery_code: Type.Optional(Type.String({ pattern: RECOVERY_CODE_PATTERN, writeOnly: true, description: 'A recovery code, as shown (`xxxxx-xxxxx`; case, spaces and dashes do not matter); or send `code`' }))
    }, { additionalProperties: false, description: '`mfa_token` and one of `code` and `recovery_code`' }),
    response: { 200: Type.Ref('TokenEnvelope', { description: 'The new session\'s access and refresh tokens' }), ...errorResponses(400, 401, 413, 415, 429) }
  }
}
