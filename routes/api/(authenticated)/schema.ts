import { Type, type Static } from '@sinclair/typebox'
import { CurrentPassword, AtLeastOneOf, Envelope, errorResponses, NamedRef, NotModified, ReadHeaders, Tagged, Timestamp, TOKEN_OR_KEY, WriteHeaders } from '../../../schemas/common.js'
import { addressFields, userFields } from './users/schema.js'
import { authTag } from '../(public)/schema.js'
import { rolesTag } from './roles/schema.js'

const auth = { tags: [authTag.name], security: [{ bearerAuth: [] }] }
const tokenOrKey = { ...auth, security: TOKEN_OR_KEY }

export const Profile = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  email: Type.String({ format: 'email' }),
  ...addressFields,
  roles: Type.Array(Type.String(), { description: 'Role names' }),
  permissions: Type.Array(Type.String(), { description: 'Names of the permissions the roles give' }),
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Profile', additionalProperties: false })
export type Profile = Static<typeof Profile>

export const accountSchemas = {
  logout: {
    ...auth,
    operationId: 'auth.logout',
    summary: 'Log out',
    description: 'Ends the session of the presented token: its access tokens stop working at once, on every instance, and its refresh token gets no new pair. With `scope=all`, every session of the caller ends, and every token; the caller\'s API keys stay (revoke them with DELETE /api/keys/{id}).',
    querystring: Type.Object({
      scope: Type.Optional(Type.Union([Type.Literal('token'), Type.Literal('all')], { default: 'token' }))
    }),
    response: { 200: Envelope(Type.Null(), { description: 'Logged out' }), ...errorResponses(400, 401, 403) }
  },
  profile: {
    ...tokenOrKey,
    operationId: 'auth.profile',
    summary: 'The caller',
    description: 'The user the token belongs to, with the names of their roles and of the permissions those give.',
    headers: ReadHeaders,
    response: { 200: Tagged(Envelope(Type.Ref(Profile)), 'The caller'), 304: NotModified, ...errorResponses(401) }
  },
  updateProfile: {
    ...auth,
    operationId: 'auth.updateProfile',
    summary: 'Change the caller\'s own name, e-mail address or password',
    description: 'Needs no permission. A new e-mail address or password needs `current_password`, or a session reauthenticated in the last 5 minutes (POST /api/profile/reauthenticate); whenever it is sent it is checked: a wrong one is 401, ' +
      'counts as a failed login (rate limited per client IP and per e-mail address with logins, 429 with Retry-After) and is audited as one (`login-failed`). ' +
      'A new password (with `c_password`) ends every other session of the caller; this one stays, and so do the caller\'s API keys. ' +
      '`If-Match` takes the `ETag` of GET /api/profile. Roles are changed through PUT/PATCH /api/users/{id}.',
    headers: WriteHeaders,
    body: AtLeastOneOf(Type.Object({
      name: userFields.name,
      email: userFields.email,
      password: userFields.password,
      c_password: userFields.c_password,
      current_password: CurrentPassword('needed to change the e-mail address or the password')
    })),
    response: { 200: Tagged(Envelope(Type.Ref(Profile)), 'The caller as changed'), ...errorResponses(400, 401, 403, 409, 412, 413, 415, 428, 429) }
  },
  permissions: {
    ...tokenOrKey,
    tags: [rolesTag.name],
    operationId: 'permissions.index',
    summary: 'List the permissions',
    description: 'Every permission a role can hold, for any caller with a valid token (403 `mfa_enrolment_required` for an account whose role requires a second factor it lacks).',
    response: { 200: Envelope(Type.Array(Type.Ref(NamedRef)), { description: 'Every permission' }), ...errorResponses(401, 403) }
  }
}

export const accountSharedSchemas = [Profile]
