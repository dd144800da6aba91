import { Type } from '@sinclair/typebox'
import { Envelope, errorResponses, Timestamp } from '../../../../../schemas/common.js'
import { TOTP_CODE_PATTERN } from '../../../../../lib/auth/totp.js'
import { authTag } from '../../../(public)/schema.js'
import { AuthenticationCredential, PasskeyToken } from '../passkeys/schema.js'

export const reauthenticateSchemas = {
  reauthenticate: {
    tags: [authTag.name],
    security: [{ bearerAuth: [] }],
    operationId: 'auth.reauthenticate',
    summary: 'Prove again who holds this session (step-up)',
    description: 'Takes one proof: the password (`current_password`), a code of the authenticator app (`code`), or a passkey (the browser\'s answer to the options of POST /api/login/passkey/options, with their `passkey_token`). ' +
      'For 5 minutes after (`reauthenticated_until`), this session may leave `current_password` out where it is asked again: a new API key, e-mail address or password, a change of the second factors or passkeys. ' +
      'A wrong password is 401 `invalid_credentials` (counted with logins, 429 with Retry-After past their limits); a wrong code 401 `invalid_mfa_code` (the tenth in a row holds the app\'s codes back for 15 minutes, 429), and an account without an app 409 `mfa_not_enrolled`; ' +
      'a passkey not the caller\'s, or an answer that does not verify, 401 `invalid_passkey`, and a ceremony unknown, spent or expired 400 `invalid_passkey_token`. The fifth wrong code or passkey of a session ends it. A wrong password, code or passkey is audited as a failed login; a success as `reauthenticate`. ' +
      'Rate limited per client IP (429 with Retry-After). Not with an API key, nor with an access token of no session.',
    // One proof, never two: three shapes, each closed.
    body: Type.Union([
      Type.Object({ current_password: Type.String({ minLength: 1, maxLength: 128, writeOnly: true, description: 'The caller\'s password as it is' }) }, { additionalProperties: false, title: 'With the password' }),
      Type.Object({ code: Type.String({ pattern: TOTP_CODE_PATTERN, writeOnly: true, description: 'The authenticator app\'s code (of now, or 30 s either side; a code, or one before it, accepted once is not accepted again)' }) }, { additionalProperties: false, title: 'With the app\'s code' }),
      Type.Object({ passkey_token: PasskeyToken, credential: AuthenticationCredential }, { additionalProperties: false, title: 'With a passkey' })
    ]),
    response: {
      200: Envelope(Type.Object({
        reauthenticated_until: { ...Timestamp, description: 'Until when this session stands for the password' }
      }, { additionalProperties: false }), { description: 'The session is reauthenticated' }),
      ...errorResponses(400, 401, 403, 409, 413, 415, 429)
    }
  }
}
