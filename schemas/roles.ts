import { Type, type Static } from '@sinclair/typebox'
import type { ListFields } from '../lib/http/list-query.js'
import { NamedRef, Timestamp } from './common.js'

/** The role every permission comes with, which always keeps a holder and its name. */
export const ADMIN_ROLE = 'Admin'

/** A role as the API shows one (and as the roles' data access returns one). */
export const Role = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  permissions: Type.Array(Type.Ref(NamedRef)),
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
