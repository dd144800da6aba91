import type { Knex } from 'knex'
import type { CallerCache } from '../../../../lib/auth/caller-cache.js'
import { uniqueConflict } from '../../../../lib/db/db-errors.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import { ADMIN_ROLE, Role, roleListFields } from './schema.js'
import { NamedRef } from '../../../../schemas/common.js'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { holdsFilter } from '../../../../lib/db/list-sql.js'
import type { Database } from '../../../../lib/db/prepared-query.js'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { oncePerDatabase } from '../../../../lib/db/once-per-database.js'

/** A role's own policy as a write sets it: null for none of its own. */
interface PolicyChange { rateLimit: string | null, rateQuota: string | null }

function createRolesRepository (database: Database, cache: CallerCache) {
  const { knex } = database
  const columns = (trx: Knex) => ['r.id', 'r.name', 'r.rate_limit', 'r.rate_quota', 'r.created_at', 'r.updated_at', trx.raw(`coalesce(
      (select json_agg(json_build_object('id', p.id, 'name', p.name) order by p.id)
       from role_permissions rp join permissions p on p.id = rp.permission_id
       where rp.role_id = r.id), '[]') as permissions`)]
  const select = (trx: Knex) => trx('roles as r').select(columns(trx))
  const table = keysetTable<Role>(database, {
    name: 'roles',
    rows: trx => trx('roles as r'),
    columns: columns(knex),
    schema: Role,
    references: [NamedRef],
    fields: roleListFields,
    id: 'r.id',
    customFilters: {
      permission: holdsFilter('select 1 from role_permissions rp join permissions p on p.id = rp.permission_id where rp.role_id = r.id and p.name = any(?::text[])')
    }
  })

  const nameTaken = (error: unknown, name: string | undefined) =>
    uniqueConflict(error, 'roles_name_unique', () => new CodedError('name_taken', `A role named ${name} already exists`))

  /** Gives the role exactly these permissions. */
  async function setPermissions (trx: Knex, roleId: number, permissionIds: number[]) {
    await trx('role_permissions').where({ role_id: roleId }).delete()
    if (permissionIds.length > 0) {
      await trx('role_permissions').insert(permissionIds.map(permissionId => ({ role_id: roleId, permission_id: permissionId })))
    }
  }

  return {
    /** One page of a list of roles, as the request asks. */
    query: table.query,

    async find (id: number, trx: Knex = knex): Promise<Role | undefined> {
      if (id > MAX_ID) return undefined
      return select(trx).where('r.id', id).first()
    },

    /**
     * The roles with these names, whatever their case, with their permissions; unknown names are
     * left out. Cases are PostgreSQL's, as the unique index on lower(name) has them (JavaScript
     * lower-cases some letters otherwise: `İ`).
     */
    async findByNames (names: string[], trx: Knex = knex): Promise<Role[]> {
      if (names.length === 0) return []
      return select(trx).whereRaw('lower(r.name) in (select lower(asked.name) from unnest(?::text[]) asked (name))', [names])
    },

    /** The names of `names` that no role has, whatever its case (PostgreSQL's, as findByNames). */
    async unknownNames (names: string[], trx: Knex = knex): Promise<string[]> {
      if (names.length === 0) return []
      return (await trx.raw<{ rows: { name: string }[] }>(
        'select asked.name from unnest(?::text[]) asked (name) where not exists (select 1 from roles r where lower(r.name) = lower(asked.name))', [names])).rows.map(row => row.name)
    },

    /** Every permission, in id order. */
    async permissions (trx: Knex = knex): Promise<{ id: number, name: string }[]> {
      return trx('permissions').select('id', 'name').orderBy('id')
    },

    async create ({ name, permissionIds, rateLimit, rateQuota }: { name: string, permissionIds: number[] } & PolicyChange, trx: Knex): Promise<Role> {
      try {
        const [{ id }] = await trx('roles').insert({ name, rate_limit: rateLimit, rate_quota: rateQuota }).returning('id')
        await setPermissions(trx, id, permissionIds)
        return (await select(trx).where('r.id', id).first()) as Role
      } catch (error) {
        throw nameTaken(error, name)
      }
    },

    async update (id: number, changes: { name?: string | undefined, permissionIds?: number[] | undefined } & Partial<PolicyChange>, trx: Knex): Promise<Role> {
      try {
        await trx('roles').update({
          ...(changes.name !== undefined && { name: changes.name }),
          ...(changes.rateLimit !== undefined && { rate_limit: changes.rateLimit }),
          ...(changes.rateQuota !== undefined && { rate_quota: changes.rateQuota }),
          updated_at: trx.fn.now()
        }).where({ id })
        if (changes.permissionIds) await setPermissions(trx, id, changes.permissionIds)
        // Its holders' permissions, or the policy they have and its name, may change.
        cache.afterCommit(trx, callers => callers.clear())
        return (await select(trx).where('r.id', id).first()) as Role
      } catch (error) {
        throw nameTaken(error, changes.name)
      }
    },

    async remove (id: number, trx: Knex): Promise<void> {
      await trx('roles').where({ id }).delete()
      cache.afterCommit(trx, callers => callers.clear())
    },

    /** Takes the lock that serialises every change touching the Admin role or its holders. */
    async lockAdmin (trx: Knex): Promise<void> {
      await trx('roles').whereRaw('name = ?', [ADMIN_ROLE]).forUpdate().select('id')
    }
  }
}

/**
 * Data access for roles and their permissions, for the routes: the roles folder's, the users'
 * (a user's roles), registration's (REGISTER_ROLES) and the permissions list.
 */
export const rolesRepository = oncePerDatabase(createRolesRepository)
