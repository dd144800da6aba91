import { Type } from '@sinclair/typebox'
import { Created, CreateHeaders, errorResponses, TokenEnvelope } from '../../../schemas/common.js'
import { userFields } from '../(authenticated)/users/schema.js'
import { MAILED_TOKEN_PATTERN } from '../../../lib/auth/mailed-tokens.js'

/** The OpenAPI tag of the account operations, with and without a token. */
export const authTag = { name: 'auth', description: 'Register, log in and out, the caller\'s profile' }

const token = (description: string) => Type.Ref('TokenEnvelope', { description })

/** An answer that is a message only (a mail asked for, a token spent): `{ success: true, message }`. */
export const Message = (description: string) => Type.Object({
  success: Type.Literal(true),
  message: Type.String()
}, { additionalProperties: false, description })

/** A login whose password matched, waiting for the second factor: the token POST /api/login/mfa takes. */
export const MfaChallenge = Type.Object({
  success: Type.Literal(true),
  mfa_required: Type.Literal(true),
  mfa_token: Type.String({ pattern: MAILED_TOKEN_PATTERN, description: 'Spent by POST /api/login/mfa with a code; opaque, good for 5 minutes and 5 wrong codes' }),
  expires_in: Type.Integer({ minimum: 1, description: 'The seconds `mfa_token` works' }),
  message: Type.String()
}, { $id: 'MfaChallenge', additionalProperties: false, description: 'The password matched; the account has an authenticator app: no session until its code comes' })

export const authSchemas = {
  login: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.login',
    summary: 'Log in',
    description: 'Starts a session: answers an access token (`data`, a bearer JWT living JWT_TTL) and a refresh token for POST /api/token/refresh. A wrong e-mail address and a wrong password get the same 401. With `REQUIRE_VERIFIED_EMAIL=true`, the right password of an account whose address is not verified gets 403 `email_unverified`. ' +
      'The right password of an account with an authenticator app (POST /api/profile/mfa/totp) starts no session yet: the answer is `{ success, mfa_required: true, mfa_token, expires_in }`, and POST /api/login/mfa completes the login with a code. Rate limited per client IP and per e-mail address (429 with Retry-After).',
    body: Type.Object({
      email: Type.String({ minLength: 1, maxLength: 254, example: 'admin@example.com' }),
      password: Type.String({ minLength: 1, maxLength: 128, writeOnly: true })
    }, { additionalProperties: false }),
    response: {
      200: Type.Union([token('The new session\'s access and refresh tokens'), Type.Ref('MfaChallenge')], { description: 'The new session\'s tokens; for an account with an authenticator app, the token to send its code with' }),
      ...errorResponses(400, 401, 403, 413, 415, 429)
    }
  },
  refresh: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.refresh',
    summary: 'Refresh a session\'s tokens',
    description: 'Spends a refresh token for a new access token and a new refresh token of the same session; needs no access token. ' +
      'A refresh token is spent once: presented again within REFRESH_REUSE_GRACE (10 s by default) of its spending it gets the same pair again ' +
      '(two tabs refreshing at once both stay logged in); later, it is taken for stolen, and its whole session ends, its access tokens too, on every instance. ' +
      'Refresh tokens live REFRESH_TTL (30 days by default) unspent, and no session outlives SESSION_MAX_AGE (90 days by default) after its login. ' +
      'Rate limited per client IP and per session (429 with Retry-After).',
    body: Type.Object({
      refresh_token: Type.String({ minLength: 1, maxLength: 256, writeOnly: true, description: 'The refresh token of the last login, register or refresh' })
    }, { additionalProperties: false }),
    response: { 200: token('The session\'s next access and refresh tokens'), ...errorResponses(400, 401, 413, 415, 429) }
  },
  register: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.register',
    summary: 'Register',
    description: 'Creates a user with the roles named in REGISTER_ROLES and starts a session of theirs: answers an access token and a refresh token, as login does. With mail on (`SMTP_URL`), a mail goes to the address with a link that verifies it (POST /api/email/verify). ' +
      'With `REQUIRE_VERIFIED_EMAIL=true` no session starts: the answer has no tokens, and login waits for the address to be verified. Rate limited like login.',
    headers: CreateHeaders,
    body: Type.Object(userFields, { additionalProperties: false }),
    response: {
      201: Created(Type.Union([Type.Ref(TokenEnvelope), Message('With REQUIRE_VERIFIED_EMAIL: registered, no session until the address is verified')]),
        'The new user\'s session: access and refresh tokens (none with REQUIRE_VERIFIED_EMAIL); `Location` is the user\'s address', false),
      ...errorResponses(400, 409, 413, 415, 422, 429)
    }
  }
}
