import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../../../schemas/common.js'
import { MAILED_TOKEN_PATTERN } from '../../../../lib/auth/mailed-tokens.js'
import { authTag, Message } from '../schema.js'

export const emailSchemas = {
  verify: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.verifyEmail',
    summary: 'Verify an e-mail address with a token sent by mail',
    description: 'Spends the token of a verification mail (`PUBLIC_URL/verify-email?token=…`): the address it went to is proven the user\'s (`email_verified_at`). A token sent for a change of address makes that address the user\'s now (409 `email_taken` if another user took it meanwhile: the token is not spent). ' +
      'A token unknown, spent, expired (after 24 hours) or not the latest one sent to the user is 400 `invalid_verification_token`. Rate limited per client IP (429 with Retry-After).',
    body: Type.Object({
      token: Type.String({ pattern: MAILED_TOKEN_PATTERN, writeOnly: true, description: 'The token of the mail\'s link' })
    }, { additionalProperties: false }),
    response: { 200: Message('The address is verified'), ...errorResponses(400, 409, 413, 415) }
  },
  resend: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.resendVerification',
    summary: 'Ask for another verification mail',
    description: 'Answers 202 at once, whether or not a user has the address, as a password reset\'s ask does. If one has and there is something to verify (an address a change waits for, else the user\'s own if unverified), a new mail goes to that address; its token replaces any sent before. ' +
      'Rate limited per client IP and per e-mail address, as logins are (`AUTH_RATE_LIMIT_IP`, `AUTH_RATE_LIMIT_EMAIL`) but counted apart (429 with Retry-After). Without `SMTP_URL`: 503 `mail_unavailable`.',
    body: Type.Object({
      email: Type.String({ minLength: 1, maxLength: 254, description: 'The user\'s address (not the one a change waits for)', example: 'ada@example.com' })
    }, { additionalProperties: false }),
    response: { 202: Message('Asked: a mail is on its way if there is something to verify'), ...errorResponses(400, 413, 415) }
  }
}
