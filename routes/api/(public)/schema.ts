import { Type } from '@sinclair/typebox'
import { Created, CreateHeaders, errorResponses, TokenEnvelope } from '../../../schemas/common.js'
import { userFields } from '../../../schemas/users.js'

/** The OpenAPI tag of the account operations, with and without a token. */
export const authTag = { name: 'auth', description: 'Register, log in and out, the caller\'s profile' }

const token = (description: string) => Type.Ref('TokenEnvelope', { description })

export const authSchemas = {
  login: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.login',
    summary: 'Log in',
    description: 'Answers a bearer token. A wrong e-mail address and a wrong password get the same 401. Rate limited per client IP and per e-mail address (429 with Retry-After).',
    body: Type.Object({
      email: Type.String({ minLength: 1, maxLength: 254, example: 'admin@example.com' }),
      password: Type.String({ minLength: 1, maxLength: 128, writeOnly: true })
    }, { additionalProperties: false }),
    response: { 200: token('A bearer token'), ...errorResponses(400, 401, 413, 415, 429) }
  },
  register: {
    tags: [authTag.name],
    security: [],
    operationId: 'auth.register',
    summary: 'Register',
    description: 'Creates a user with the roles named in REGISTER_ROLES and answers a bearer token for them. Rate limited like login.',
    headers: CreateHeaders,
    body: Type.Object(userFields, { additionalProperties: false }),
    response: { 201: Created(TokenEnvelope, 'A bearer token for the new user; `Location` is the user\'s address', false), ...errorResponses(400, 409, 413, 415, 422, 429) }
  }
}
