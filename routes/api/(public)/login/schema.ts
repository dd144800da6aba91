import { Type } from '@sinclair/typebox'
import { errorResponses } from '../../../../schemas/common.js'
import { MAILED_TOKEN_PATTERN } from '../../../../lib/auth/mailed-tokens.js'
import { RECOVERY_CODE_PATTERN, TOTP_CODE_PATTERN } from '../../../../lib/auth/totp.js'
import { authTag } from '../schema.js'
import { AuthenticationCredential, CeremonyOptions, PasskeyToken } from '../../(authenticated)/profile/passkeys/schema.js'

const MfaToken = Type.String({ pattern: MAILED_TOKEN_PATTERN, writeOnly: true, description: 'The token of the login\'s answer' })

export const loginSchemas = {
  passkeyOptions: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.passkeyOptions',
    summary: 'Start a login with a passkey',
    description: 'Answers the options of `navigator.credentials.get()` (as JSON: `PublicKeyCredential.parseRequestOptionsFromJSON(data)`): any passkey of the site, the user verified; the authenticator offers the user\'s. ' +
      'Send its answer with `passkey_token` to POST /api/login/passkey within 5 minutes. Rate limited per client IP (429 with Retry-After).',
    response: { 200: CeremonyOptions('PublicKeyCredentialRequestOptionsJSON'), ...errorResponses(429) }
  },
  passkey: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.loginPasskey',
    summary: 'Log in with a passkey',
    description: 'Takes the browser\'s answer to the options (`credential.toJSON()`) with their `passkey_token`, and starts a session of the passkey\'s user: answers its tokens, as login does. No password, and no second step: the passkey is something the user has, ' +
      'and the authenticator verified who holds it. A token unknown, spent or expired is 400 `invalid_passkey_token`; a passkey not registered, or an answer that does not verify, 401 `invalid_passkey`. ' +
      'With `REQUIRE_VERIFIED_EMAIL=true`, an account whose address is not verified gets 403 `email_unverified`. Rate limited per client IP (429 with Retry-After).',
    body: Type.Object({ passkey_token: PasskeyToken, credential: AuthenticationCredential }, { additionalProperties: false }),
    response: { 200: Type.Ref('TokenEnvelope', { description: 'The new session\'s access and refresh tokens' }), ...errorResponses(400, 401, 403, 413, 415, 429) }
  },
  mfa: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.loginMfa',
    summary: 'Complete a login with the second factor',
    description: 'Takes the `mfa_token` of a login that answered `mfa_required`, and one of: `code`, the 6 digits the authenticator app shows (of now, or 30 s either side; ' +
      'a code, or one before it, accepted once is not accepted again), or `recovery_code`, one of the codes shown at enrolment (each works once). ' +
      'Starts the session: answers its tokens, as login does. A wrong code is 401 `invalid_mfa_code`; the fifth spends the `mfa_token`. A token unknown, expired (5 minutes), spent, ' +
      'or of a password changed since is 401 `invalid_mfa_token`: log in again. The tenth wrong code in a row, across logins, holds the app\'s codes back for 15 minutes (429 with Retry-After; recovery codes still work). Rate limited per client IP (429 with Retry-After).',
    // Either second factor, never both: two shapes, each closed.
    body: Type.Union([
      Type.Object({ mfa_token: MfaToken, code: Type.String({ pattern: TOTP_CODE_PATTERN, writeOnly: true, description: 'The authenticator app\'s code' }) }, { additionalProperties: false, title: 'With the app\'s code' }),
      Type.Object({ mfa_token: MfaToken, recovery_code: Type.String({ pattern: RECOVERY_CODE_PATTERN, writeOnly: true, description: 'A recovery code, as shown (`xxxxx-xxxxx`; case, spaces and dashes do not matter)' }) }, { additionalProperties: false, title: 'With a recovery code' })
    ]),
    response: { 200: Type.Ref('TokenEnvelope', { description: 'The new session\'s access and refresh tokens' }), ...errorResponses(400, 401, 413, 415, 429) }
  }
}
