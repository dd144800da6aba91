import { Type, type Static } from '@sinclair/typebox'
import { CurrentPassword, Envelope, errorResponses, IdParams, Timestamp } from '../../../../../schemas/common.js'
import { MAILED_TOKEN_PATTERN } from '../../../../../lib/auth/mailed-tokens.js'
import { authTag } from '../../../(public)/schema.js'

const auth = { tags: [authTag.name], security: [{ bearerAuth: [] }] }

/** A WebAuthn binary value as the browser's `toJSON()` writes it: base64url. */
const Base64Url = (maxLength: number) => Type.String({ pattern: '^[A-Za-z0-9_-]*$', maxLength })

/** The caller's password, asked again before a change of their passkeys. */
const currentPassword = CurrentPassword('needed to change the passkeys')

/** The opaque token a ceremony's options came with, sent back with the browser's answer. */
export const PasskeyToken = Type.String({ pattern: MAILED_TOKEN_PATTERN, description: 'Names the ceremony: works once, for 5 minutes' })

export const Passkey = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String({ description: 'As the user named it' }),
  created_at: Timestamp,
  last_used_at: Type.Union([Timestamp, Type.Null()], { description: 'Its last login; null: none yet' })
}, { additionalProperties: false })
export type Passkey = Static<typeof Passkey>

/** What `navigator.credentials.create()`'s credential's `toJSON()` answers (WebAuthn Level 3, RegistrationResponseJSON). */
export const RegistrationCredential = Type.Object({
  id: Base64Url(1366),
  rawId: Base64Url(1366),
  type: Type.Literal('public-key'),
  response: Type.Object({
    clientDataJSON: Base64Url(8192),
    attestationObject: Base64Url(32_768),
    transports: Type.Optional(Type.Array(Type.String({ maxLength: 32 }), { maxItems: 8 }))
  }, { additionalProperties: true, description: 'Also the other fields `toJSON()` writes (authenticatorData, publicKey, …): not read' }),
  authenticatorAttachment: Type.Optional(Type.String({ maxLength: 32 })),
  clientExtensionResults: Type.Object({}, { additionalProperties: true })
}, { additionalProperties: false, writeOnly: true })

/** What `navigator.credentials.get()`'s credential's `toJSON()` answers (AuthenticationResponseJSON). */
export const AuthenticationCredential = Type.Object({
  id: Base64Url(1366),
  rawId: Base64Url(1366),
  type: Type.Literal('public-key'),
  response: Type.Object({
    clientDataJSON: Base64Url(8192),
    authenticatorData: Base64Url(8192),
    signature: Base64Url(2048),
    userHandle: Type.Optional(Base64Url(256))
  }, { additionalProperties: false }),
  authenticatorAttachment: Type.Optional(Type.String({ maxLength: 32 })),
  clientExtensionResults: Type.Object({}, { additionalProperties: true })
}, { additionalProperties: false, writeOnly: true })

/** A ceremony's options, for the browser: `PublicKeyCredential.parse…OptionsFromJSON()` takes them as they are. */
export const CeremonyOptions = (what: string) => Type.Object({
  success: Type.Literal(true),
  data: Type.Object({ challenge: Base64Url(512) }, { additionalProperties: true, description: what }),
  passkey_token: PasskeyToken
}, { additionalProperties: false })

export const passkeySchemas = {
  list: {
    ...auth,
    operationId: 'passkeys.index',
    summary: 'The caller\'s passkeys',
    description: 'Needs no permission; not with an API key.',
    response: { 200: Envelope(Type.Array(Passkey), { description: 'Oldest first' }), ...errorResponses(401, 403) }
  },
  options: {
    ...auth,
    operationId: 'passkeys.options',
    summary: 'Start registering a passkey',
    description: 'Answers the options of `navigator.credentials.create()` (as JSON: `PublicKeyCredential.parseCreationOptionsFromJSON(data)`), and the `passkey_token` to send back with its answer (POST /api/profile/passkeys) within 5 minutes. ' +
      'The passkey is kept by the authenticator, and the user verified by it (a PIN, a fingerprint). A wrong `current_password` is 401 `invalid_credentials`, counted and audited as a failed login. Not with an API key.',
    body: Type.Object({ current_password: currentPassword }, { additionalProperties: false }),
    response: { 200: CeremonyOptions('PublicKeyCredentialCreationOptionsJSON'), ...errorResponses(400, 401, 403, 413, 415, 429) }
  },
  add: {
    ...auth,
    operationId: 'passkeys.create',
    summary: 'Register a passkey',
    description: 'Takes the browser\'s answer to the options (`credential.toJSON()`) with their `passkey_token`, and keeps the passkey: from then on POST /api/login/passkey logs the user in with it, without the password. ' +
      'A token unknown, spent, expired or of another user is 400 `invalid_passkey_token`; an answer that does not verify (another origin than `WEBAUTHN_ORIGINS`, another challenge, no user verification) is 400 `invalid_body`; a passkey registered already, 409. Not with an API key.',
    body: Type.Object({
      passkey_token: PasskeyToken,
      name: Type.String({ minLength: 1, maxLength: 100, description: 'To tell the user\'s passkeys apart ("Laptop", "Phone")' }),
      credential: RegistrationCredential
    }, { additionalProperties: false }),
    response: { 201: Envelope(Passkey, { description: 'The passkey kept' }), ...errorResponses(400, 401, 403, 409, 413, 415) }
  },
  remove: {
    ...auth,
    operationId: 'passkeys.delete',
    summary: 'Remove a passkey',
    description: 'The passkey no longer logs in. Another user\'s, or none, is 404. A wrong `current_password` is 401 `invalid_credentials`, counted and audited as a failed login. Not with an API key.',
    params: IdParams,
    body: Type.Object({ current_password: currentPassword }, { additionalProperties: false }),
    response: { 200: Envelope(Passkey, { description: 'The passkey as it was' }), ...errorResponses(400, 401, 403, 404, 413, 415, 429) }
  }
}
