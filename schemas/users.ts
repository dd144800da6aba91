import { Type, type Static } from '@sinclair/typebox'
import type { ListFields } from '../lib/http/list-query.js'
import { NamedRef, Timestamp } from './common.js'

/** Fields shared by registration and the users resource. */
export const userFields = {
  name: Type.String({ minLength: 1, maxLength: 255, example: 'Grace Hopper' }),
  email: Type.String({ format: 'email', maxLength: 254, description: 'Unique without regard to case', example: 'grace@example.com' }),
  password: Type.String({ minLength: 8, maxLength: 128, description: '8 to 128 characters, not trimmed', writeOnly: true }),
  c_password: Type.String({ maxLength: 128, description: 'The password again', writeOnly: true })
}

/** A user as the API shows one (and as the users' data access returns one). */
export const User = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  name: Type.String(),
  email: Type.String({ format: 'email' }),
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
