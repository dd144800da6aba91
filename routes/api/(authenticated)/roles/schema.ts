import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../lib/http/list-query.js'
import { AtLeastOneOf, Created, CreateHeaders, Envelope, errorResponses, IdParams, ListResponse, NamedRef, NotModified, ReadHeaders, Tagged, Timestamp, WriteHeaders, TOKEN_OR_KEY } from '../../../../schemas/common.js'

/** The role every permission comes with, which always keeps a holder and its name. */
export const ADMIN_ROLE = 'Admin'

/** A role as the API shows one (and as the roles' data access returns one). */
export const Role = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  permissions: Type.Array(Type.Ref(NamedRef)),
  rate_limit: Type.Union([Type.String(), Type.Null()], { description: 'The role\'s own rate limit (`600/1m`, `off` for none); null: RATE_LIMIT\'s' }),
  rate_quota: Type.Union([Type.String(), Type.Null()], { description: 'The role\'s own daily quota (`10000/1d`, `off` for none); null: RATE_QUOTA\'s' }),
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Role', additionalProperties: false })
export type Role = Static<typeof Role>

/** What lists of roles filter and sort on; `permission` is a permission the role holds. */
export const roleListFields: ListFields = {
  id: { type: 'integer', column: 'r.id', sortable: true },
  name: { type: 'text', column: 'r.name', sortable: true },
  created_at: { type: 'timestamp', column: 'r.created_at', sortable: true, description: 'creation time' },
  updated_at: { type: 'timestamp', column: 'r.updated_at', description: 'last update\'s time' },
  permission: { type: 'text', operators: ['eq', 'ne', 'in'], description: 'the permissions the role holds, by name: `eq` and `in` keep roles holding one, `ne` roles holding none' }
}

/** A rate limit as a client writes one: `<count>/<duration>`; lib/limits/rate-policy.ts reads it. */
export const RATE_FORM = '^[1-9][0-9]{0,9}/[1-9][0-9]{0,9}(ms|s|m|h|d)?$'
/** A policy's parts a role (and a key) may carry: `off` too for a role, whose holders then have none. */
export const policyFields = (off: boolean) => ({
  rate_limit: Type.Union([Type.String({ pattern: off ? `^off$|${RATE_FORM}` : RATE_FORM, maxLength: 24 }), Type.Null()], {
    description: `A rate limit of its own: \`<count>/<duration>\`, a bucket of \`count\` units refilled evenly over the window (whole seconds, 1s to 1d)${off ? ', or `off`' : ''}; null for none of its own`,
    example: '600/1m'
  }),
  rate_quota: Type.Union([Type.String({ pattern: off ? `^off$|${RATE_FORM}` : RATE_FORM, maxLength: 24 }), Type.Null()], {
    description: `A daily quota of its own: \`<count>/1d\`, units a UTC day${off ? ', or `off`' : ''}; null for none of its own`,
    example: '10000/1d'
  })
})

export const roleFields = {
  name: Type.String({ minLength: 1, maxLength: 255, description: 'Unique without regard to case', example: 'Editor' }),
  permission: Type.Array(Type.String({ minLength: 1, maxLength: 255 }), {
    uniqueItems: true, maxItems: 100, description: 'The names of the role\'s permissions', example: ['client-list', 'client-edit']
  }),
  ...policyFields(true)
}

/** A role's fields as a create or a replace takes them: its policy may be left out (none of its own). */
const roleInputFields = { ...roleFields, rate_limit: Type.Optional(roleFields.rate_limit), rate_quota: Type.Optional(roleFields.rate_quota) }

export const RoleInput = Type.Object(roleInputFields, { $id: 'RoleInput', additionalProperties: false })
export type RoleInput = Static<typeof RoleInput>

const RoleEnvelope = (description: string) => Envelope(Type.Ref(Role), { description })
const TaggedRoleEnvelope = Envelope(Type.Ref(Role))
/** The OpenAPI tag of every role operation. */
export const rolesTag = { name: 'roles', description: 'Roles and permissions, behind the role-* permissions' }
const auth = { tags: [rolesTag.name], security: TOKEN_OR_KEY }

export const roleSchemas = {
  index: {
    ...auth,
    operationId: 'roles.index',
    summary: 'List roles',
    description: 'Filtered and sorted as asked (by default all, in id order), `limit` at a time (default 100, at most 1000); needs role-list.',
    querystring: listQuerySchema(roleListFields),
    headers: ReadHeaders,
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(Role))), 'One page of roles'), 304: NotModified, ...errorResponses(400, 401, 403) }
  },
  show: {
    ...auth,
    operationId: 'roles.show',
    summary: 'Get one role',
    description: 'Needs role-list.',
    params: IdParams,
    headers: ReadHeaders,
    response: { 200: Tagged(TaggedRoleEnvelope, 'The role'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  store: {
    ...auth,
    operationId: 'roles.store',
    summary: 'Create a role',
    description: 'Nobody can create a role holding a permission they lack themselves (403). A role may carry a rate limit and a daily quota of its own: a user has, of each, the most generous of their roles\' (README, "Rate limits and quotas").',
    body: Type.Ref(RoleInput),
    headers: CreateHeaders,
    response: { 201: Created(TaggedRoleEnvelope, 'The new role; `Location` is its address'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  update: (method: 'PUT' | 'PATCH') => ({
    ...auth,
    operationId: method === 'PUT' ? 'roles.update' : 'roles.patch',
    summary: method === 'PUT' ? 'Replace a role' : 'Change a role\'s name or permissions',
    description: 'Nobody can give a role a permission they lack themselves (403). The Admin role cannot be renamed or lose a permission (409). A replace without `rate_limit` or `rate_quota` leaves the role none of its own. A policy set or changed is audited, and holds from the holders\' next request on (within a second on other instances), starting from the units the old one left, never more than its count (units that instances took ahead under the old one are not given back to it).',
    params: IdParams,
    body: method === 'PUT' ? Type.Ref(RoleInput) : AtLeastOneOf(Type.Object(roleFields)),
    headers: WriteHeaders,
    response: { 200: Tagged(TaggedRoleEnvelope, 'The role as changed'), ...errorResponses(400, 401, 403, 404, 409, 412, 413, 415, 428) }
  }),
  destroy: {
    ...auth,
    operationId: 'roles.destroy',
    summary: 'Delete a role',
    description: 'The users holding the role lose it. The Admin role cannot be deleted (409).',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: RoleEnvelope('The deleted role'), ...errorResponses(400, 401, 403, 404, 409, 412, 428) }
  }
}

export const roleSharedSchemas = [RoleInput, Role]
