import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../lib/http/list-query.js'
import { CurrentPassword, AtLeastOneOf, Created, CreateHeaders, Envelope, errorResponses, IdParams, ListResponse, NamedRef, NotModified, ReadHeaders, Tagged, Timestamp, WriteHeaders, TOKEN_OR_KEY } from '../../../../schemas/common.js'

/** Fields shared by registration and the users resource. */
export const userFields = {
  name: Type.String({ minLength: 1, maxLength: 255, example: 'Grace Hopper' }),
  email: Type.String({ format: 'email', maxLength: 254, description: 'Unique without regard to case', example: 'grace@example.com' }),
  password: Type.String({ minLength: 8, maxLength: 128, description: '8 to 128 characters, not trimmed', writeOnly: true }),
  c_password: Type.String({ maxLength: 128, description: 'The password again', writeOnly: true })
}

/** Where a user's address stands: verified when, and the one a change waits to verify. */
export const addressFields = {
  email_verified_at: Type.Union([Timestamp, Type.Null()], { description: 'When the address was verified by the link of a mail sent to it; null: never, or not since it changed' }),
  pending_email: Type.Union([Type.String({ format: 'email' }), Type.Null()], { description: 'The address a change waits to verify before it replaces `email` (a mail with a link went to it); null: none' })
}

/** A user as the API shows one (and as the users' data access returns one). */
export const User = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  email: Type.String({ format: 'email' }),
  ...addressFields,
  roles: Type.Array(Type.Ref(NamedRef)),
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'User', additionalProperties: false })
export type User = Static<typeof User>

/** What lists of users filter and sort on; `role` is a role the user holds (by name, in any case). */
export const userListFields: ListFields = {
  id: { type: 'integer', column: 'u.id', sortable: true },
  name: { type: 'text', column: 'u.name', sortable: true },
  email: { type: 'text', column: 'u.email' },
  created_at: { type: 'timestamp', column: 'u.created_at', sortable: true, description: 'creation time' },
  updated_at: { type: 'timestamp', column: 'u.updated_at', description: 'last update\'s time' },
  role: { type: 'text', operators: ['eq', 'ne', 'in'], description: 'the roles the user holds, by name in any case: `eq` and `in` keep users holding one, `ne` users holding none' }
}

const currentPassword = CurrentPassword('needed when the caller changes their own e-mail address or password (as `PATCH /api/profile` needs it)')

const roles = Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
  uniqueItems: true, maxItems: 100, description: 'The names of the user\'s roles', example: ['User']
})

export const UserInput = Type.Object({
  ...userFields,
  roles: Type.Optional(roles)
}, { $id: 'UserInput', additionalProperties: false })

/** PUT: every field but the password, which stays unless given. */
const UserReplacement = Type.Object({
  name: userFields.name,
  email: userFields.email,
  password: Type.Optional(userFields.password),
  c_password: Type.Optional(userFields.c_password),
  roles,
  current_password: currentPassword
}, { additionalProperties: false })

const UserChanges = AtLeastOneOf(Type.Object({
  name: userFields.name, email: userFields.email, password: userFields.password, c_password: userFields.c_password, roles, current_password: currentPassword
}))

export type UserChanges = Static<typeof UserChanges>

const UserEnvelope = (description: string) => Envelope(Type.Ref(User), { description })
const TaggedUserEnvelope = Envelope(Type.Ref(User))
/** The OpenAPI tag of every user operation. */
export const usersTag = { name: 'users', description: 'Users, behind the user-* permissions' }
const auth = { tags: [usersTag.name], security: TOKEN_OR_KEY }

export const userSchemas = {
  index: {
    ...auth,
    operationId: 'users.index',
    summary: 'List users',
    description: 'Filtered and sorted as asked (by default all, in id order), `limit` at a time (default 100, at most 1000); needs user-list.',
    querystring: listQuerySchema(userListFields),
    headers: ReadHeaders,
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(User))), 'One page of users'), 304: NotModified, ...errorResponses(400, 401, 403) }
  },
  show: {
    ...auth,
    operationId: 'users.show',
    summary: 'Get one user',
    description: 'Needs user-list.',
    params: IdParams,
    headers: ReadHeaders,
    response: { 200: Tagged(TaggedUserEnvelope, 'The user'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  store: {
    ...auth,
    operationId: 'users.store',
    summary: 'Create a user',
    description: 'Nobody can grant a role holding a permission they lack themselves (403).',
    body: Type.Ref(UserInput),
    headers: CreateHeaders,
    response: { 201: Created(TaggedUserEnvelope, 'The new user; `Location` is its address'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  update: (method: 'PUT' | 'PATCH') => ({
    ...auth,
    operationId: method === 'PUT' ? 'users.update' : 'users.patch',
    summary: method === 'PUT' ? 'Replace a user' : 'Change some fields of a user',
    description: 'The password changes only when given (with c_password): it ends every session of the user (but the caller\'s own), and, set for someone else, revokes every API key of theirs. ' +
      'The caller\'s own e-mail address or password changes only with their `current_password` (400 without it, 401 wrong), or in a session reauthenticated in the last 5 minutes (POST /api/profile/reauthenticate), as the profile\'s. ' +
      'Nobody can grant a role holding a permission they lack (403); the last holder of Admin cannot lose it (409). An API key cannot change the user it belongs to (403).',
    params: IdParams,
    body: method === 'PUT' ? UserReplacement : UserChanges,
    headers: WriteHeaders,
    response: { 200: Tagged(TaggedUserEnvelope, 'The user as changed'), ...errorResponses(400, 401, 403, 404, 409, 412, 413, 415, 428) }
  }),
  removeFactor: {
    ...auth,
    operationId: 'users.removeFactor',
    summary: 'Turn a user\'s authenticator app off',
    description: 'For a user who lost the device and its recovery codes: ends their authenticator app (or an enrolment under way), its recovery codes and their logins waiting for a code; their logins take no second step until they enrol again. ' +
      'Needs `user-edit` and every permission the user holds (403), and the caller\'s own `current_password` (or a session reauthenticated in the last 5 minutes). A user without an app is 409 `mfa_not_enrolled`. Not with an API key (403 `access_token_required`). Audited as `mfa-disable` of the user by the caller.',
    params: IdParams,
    body: Type.Object({ current_password: CurrentPassword('needed to turn a user\'s second factor off') }, { additionalProperties: false }),
    response: { 200: Envelope(Type.Null(), { description: 'Off' }), ...errorResponses(400, 401, 403, 404, 409, 413, 415, 429) }
  },
  destroy: {
    ...auth,
    operationId: 'users.destroy',
    summary: 'Delete a user',
    description: 'Soft delete: the user is kept, invisible to the API, and their e-mail address is free again. The last holder of Admin cannot be deleted (409). An API key cannot delete the user it belongs to (403).',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: UserEnvelope('The deleted user'), ...errorResponses(400, 401, 403, 404, 409, 412, 428) }
  }
}

export const userSharedSchemas = [UserInput, User]
