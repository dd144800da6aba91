import { Type } from '@sinclair/typebox'
import { Envelope, errorResponses, NamedRef, NotModified, ReadHeaders, Tagged, Timestamp } from '../../../schemas/common.js'
import { authTag } from '../(public)/schema.js'
import { rolesTag } from './roles/schema.js'

const auth = { tags: [authTag.name], security: [{ bearerAuth: [] }] }

export const Profile = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  email: Type.String({ format: 'email' }),
  roles: Type.Array(Type.String(), { description: 'Role names' }),
  permissions: Type.Array(Type.String(), { description: 'Names of the permissions the roles give' }),
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Profile', additionalProperties: false })

export const accountSchemas = {
  logout: {
    ...auth,
    operationId: 'auth.logout',
    summary: 'Log out',
    description: 'The presented token stops working at once; with `scope=all`, every token of the caller does.',
    querystring: Type.Object({
      scope: Type.Optional(Type.Union([Type.Literal('token'), Type.Literal('all')], { default: 'token' }))
    }),
    response: { 200: Envelope(Type.Null(), { description: 'Logged out' }), ...errorResponses(400, 401) }
  },
  profile: {
    ...auth,
    operationId: 'auth.profile',
    summary: 'The caller',
    description: 'The user the token belongs to, with the names of their roles and of the permissions those give.',
    headers: ReadHeaders,
    response: { 200: Tagged(Envelope(Type.Ref(Profile)), 'The caller'), 304: NotModified, ...errorResponses(401) }
  },
  permissions: {
    ...auth,
    tags: [rolesTag.name],
    operationId: 'permissions.index',
    summary: 'List the permissions',
    description: 'Every permission a role can hold, for any caller with a valid token.',
    response: { 200: Envelope(Type.Array(Type.Ref(NamedRef)), { description: 'Every permission' }), ...errorResponses(401) }
  }
}

export const accountSharedSchemas = [Profile]
