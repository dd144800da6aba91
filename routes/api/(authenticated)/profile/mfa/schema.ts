import { Type, type Static } from '@sinclair/typebox'
import { CurrentPassword, Envelope, errorResponses, Timestamp } from '../../../../../schemas/common.js'
import { RECOVERY_CODE_COUNT, TOTP_CODE_PATTERN } from '../../../../../lib/auth/totp.js'
import { authTag } from '../../../(public)/schema.js'

const auth = { tags: [authTag.name], security: [{ bearerAuth: [] }] }

/** The caller's password, asked again before a change of their second factors. */
const currentPassword = Type.Object({
  current_password: CurrentPassword('needed to change the second factors')
}, { additionalProperties: false })

const passwordChecked = 'A wrong `current_password` is 401 `invalid_credentials`, counted and audited as a failed login (429 with Retry-After past the login limits).'

export const MfaStatus = Type.Object({
  totp: Type.Object({
    enabled: Type.Boolean({ description: 'Logins ask for a code of the authenticator app' }),
    pending: Type.Boolean({ description: 'An enrolment waits for its first code (POST /api/profile/mfa/totp/confirm)' }),
    confirmed_at: Type.Union([Timestamp, Type.Null()])
  }, { additionalProperties: false }),
  recovery_codes_left: Type.Integer({ minimum: 0, maximum: RECOVERY_CODE_COUNT, description: 'Recovery codes not spent yet' })
}, { additionalProperties: false })
export type MfaStatus = Static<typeof MfaStatus>

const RecoveryCodes = Type.Object({
  recovery_codes: Type.Array(Type.String({ example: 'k7mqx-3pt9a' }), { minItems: RECOVERY_CODE_COUNT, maxItems: RECOVERY_CODE_COUNT, description: 'Each works once in place of a code (POST /api/login/mfa `recovery_code`); shown this once only, kept hashed' })
}, { additionalProperties: false })

export const mfaSchemas = {
  status: {
    ...auth,
    operationId: 'mfa.status',
    summary: 'The caller\'s second factors',
    description: 'Needs no permission; not with an API key.',
    response: { 200: Envelope(MfaStatus, { description: 'The caller\'s second factors' }), ...errorResponses(401, 403) }
  },
  startTotp: {
    ...auth,
    operationId: 'mfa.startTotp',
    summary: 'Start enrolling an authenticator app (TOTP)',
    description: 'Answers a new secret for an authenticator app (RFC 6238: SHA-1, 6 digits, 30 s), as text, as an `otpauth://` URI and as a QR code (SVG) of that URI. ' +
      'Nothing changes for logins until the app\'s first code confirms it (POST /api/profile/mfa/totp/confirm); starting again replaces a secret not confirmed. ' +
      'An account with a confirmed factor is 409 `mfa_enrolled`: disable it first. ' + passwordChecked + ' Not with an API key.',
    body: currentPassword,
    response: {
      200: Envelope(Type.Object({
        secret: Type.String({ pattern: '^[A-Z2-7]+=*$', description: 'The shared secret, base32, for typing into an app' }),
        otpauth_uri: Type.String({ pattern: '^otpauth://totp/', description: 'The secret as apps scan it' }),
        qr_code_svg: Type.String({ contentMediaType: 'image/svg+xml', description: 'A QR code of `otpauth_uri`, an SVG document' })
      }, { additionalProperties: false }), { description: 'The secret to enrol; nothing is on until it is confirmed' }),
      ...errorResponses(400, 401, 403, 409, 413, 415, 429)
    }
  },
  confirmTotp: {
    ...auth,
    operationId: 'mfa.confirmTotp',
    summary: 'Confirm the authenticator app with its first code',
    description: 'Turns the factor on with a code of the app (of now, or 30 s either side), and answers 10 recovery codes, each good once for a login without the app: shown this once only. ' +
      'From then on a login answers `mfa_required` and waits for a code (POST /api/login/mfa). A code that does not match is 400 `invalid_body`, and the fifth ends the enrolment; no enrolment under way is 409 `mfa_not_enrolled`. ' +
      'Rate limited per client IP (429 with Retry-After). Not with an API key.',
    body: Type.Object({
      code: Type.String({ pattern: TOTP_CODE_PATTERN, writeOnly: true, description: 'The 6 digits the app shows' })
    }, { additionalProperties: false }),
    response: { 200: Envelope(RecoveryCodes, { description: 'On; the recovery codes, shown once' }), ...errorResponses(400, 401, 403, 409, 413, 415, 429) }
  },
  disableTotp: {
    ...auth,
    operationId: 'mfa.disableTotp',
    summary: 'Turn the authenticator app off',
    description: 'Ends the factor (or an enrolment under way), its recovery codes, and the logins waiting for a code: logins need the password only again. ' +
      'None to end is 409 `mfa_not_enrolled`. ' + passwordChecked + ' Not with an API key.',
    body: currentPassword,
    response: { 200: Envelope(Type.Null(), { description: 'Off' }), ...errorResponses(400, 401, 403, 409, 413, 415, 429) }
  },
  recoveryCodes: {
    ...auth,
    operationId: 'mfa.recoveryCodes',
    summary: 'New recovery codes',
    description: 'Answers 10 new recovery codes, shown this once only; the earlier ones stop working. Without a confirmed factor: 409 `mfa_not_enrolled`. ' + passwordChecked + ' Not with an API key.',
    body: currentPassword,
    response: { 200: Envelope(RecoveryCodes, { description: 'The new recovery codes, shown once' }), ...errorResponses(400, 401, 403, 409, 413, 415, 429) }
  }
}
