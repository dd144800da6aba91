import { Type, type Static } from '@sinclair/typebox'
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
