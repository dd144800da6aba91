import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../../../schemas/common.js'
import { userFields } from '../../(authenticated)/users/schema.js'
import { MAILED_TOKEN_PATTERN } from '../../../../lib/auth/mailed-tokens.js'
import { authTag, Message } from '../schema.js'

export const passwordSchemas = {
  forgot: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.forgotPassword',
    summary: 'Ask for a password reset by mail',
    description: 'Answers 202 at once, whether or not a user has the address (the answer tells nobody which addresses are known, nor does its time). If one has, a mail is sent to it with a link to `PUBLIC_URL/reset-password?token=…`: the token works once, for an hour, and only the latest one sent works. ' +
      'Rate limited per client IP and per e-mail address, as logins are (`AUTH_RATE_LIMIT_IP`, `AUTH_RATE_LIMIT_EMAIL`) but counted apart (429 with Retry-After). Without `SMTP_URL` the service sends no mail: 503 `mail_unavailable`.',
    body: Type.Object({
      email: Type.String({ minLength: 1, maxLength: 254, example: 'ada@example.com' })
    }, { additionalProperties: false }),
    response: { 202: Message('Asked: a mail is on its way if a user has the address'), ...errorResponses(400, 413, 415) }
  },
  reset: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.resetPassword',
    summary: 'Set a new password with a token sent by mail',
    description: 'Sets the password of the user the token was sent to, spends the token, and ends every session, API key and passkey of the user (whoever held the account meanwhile may have made some) and any change of address waiting for its verification: log in again. An authenticator app stays on: the mail proves the address, not the phone. ' +
      'A token unknown, spent, expired, not the latest one sent, or sent before the password or the address changed is 400 `invalid_reset_token`. Rate limited per client IP (429 with Retry-After). Without `SMTP_URL`: 503 `mail_unavailable`.',
    body: Type.Object({
      token: Type.String({ pattern: MAILED_TOKEN_PATTERN, writeOnly: true, description: 'The token of the mail\'s link' }),
      password: userFields.password,
      c_password: userFields.c_password
    }, { additionalProperties: false }),
    response: { 200: Message('The password is set; every session and API key of the user has ended'), ...errorResponses(400, 413, 415) }
  }
}
