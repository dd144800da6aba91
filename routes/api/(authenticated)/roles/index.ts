import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Knex } from 'knex'
import { InvalidFields } from '../../../../lib/http/invalid-fields.js'
import { representationTagger } from '../../../../lib/http/entity-tags.js'
import { NamedRef } from '../../../../schemas/common.js'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import { ownPolicyProblems, policyChange, type OwnPolicy } from '../../../../lib/limits/rate-policy.js'
import { rolesRepository } from './repository.js'
import { ADMIN_ROLE, Role, roleListFields, rolesTag, roleSchemas, roleSharedSchemas } from './schema.js'

/**
 * A role's tag is the digest of the role as shown, permissions included. Every write of a role
 * holds the Admin role's lock, so an `If-Match` checked in its transaction holds until it commits.
 */
const roleTag = representationTagger(Role, [NamedRef])

/** `/api/roles`: roles and their permissions, behind the role-* permissions. */
const roles: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: rolesTag, schemas: roleSharedSchemas, events: { resource: 'role', record: Role } })
  const repository = rolesRepository(fastify.database, fastify.callerCache)
  const { conflict, forbidden, notFound } = fastify.httpErrors
  const roleNotFound = (id: number) => notFound(`Role ${id} not found`)
  // Every write of a role holds the Admin role's lock first: the last-admin rule of the users'
  // writes reads the Admin role's holders under it.
  const kind: RecordKind<Role> = {
    resource: 'role',
    lock: async (id, trx) => { await repository.lockAdmin(trx); return repository.find(id, trx) },
    notFound: roleNotFound,
    tag: roleTag
  }

  /**
   * The ids of the named permissions that a role of `current` ones is to hold. Nobody acts on a
   * role that holds more than they do: every permission it holds before or after the change
   * must be held by the caller (granting one, taking one away, or renaming a role that
   * registration or other users' grants find by its name).
   */
  async function changeable (names: string[], current: string[], held: Set<string>, trx: Knex): Promise<number[]> {
    const known = new Map((await repository.permissions(trx)).map(p => [p.name, p.id]))
    const unknown = names.filter(name => !known.has(name))
    if (unknown.length > 0) {
      throw new InvalidFields({ permission: unknown.map(name => `unknown permission: ${name}`) })
    }
    const lacking = [...new Set([...current, ...names])].filter(name => !held.has(name))
    if (lacking.length > 0) throw forbidden(`You cannot change a role holding permissions you lack: ${lacking.join(', ')}`)
    return names.map(name => known.get(name)!)
  }

  /** 400 if the role's policy is not one the service reads (a window of 1s to 1d, whole seconds; a quota of 1d). */
  function checkPolicy (body: Partial<OwnPolicy>) {
    const problems = ownPolicyProblems(body, true)
    if (Object.keys(problems).length > 0) throw new InvalidFields(problems)
  }

  fastify.get('/', { schema: roleSchemas.index, onRequest: fastify.can('role-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, roleListFields)
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: roleSchemas.show, onRequest: fastify.can('role-list') }, async (request, reply) => {
    const role = await repository.find(request.params.id)
    if (!role) throw roleNotFound(request.params.id)
    return reply.sendTagged(roleTag(role), { success: true as const, data: role })
  })

  fastify.post('/', { schema: roleSchemas.store, onRequest: fastify.can('role-create') }, async (request, reply) => {
    const { name, permission, rate_limit: rateLimit = null, rate_quota: rateQuota = null } = request.body
    checkPolicy(request.body)
    return request.createRecord(reply, kind, async trx => {
      const permissionIds = await changeable(permission, [], request.user.permissions, trx)
      return repository.create({ name, permissionIds, rateLimit, rateQuota }, trx)
    }, role => ({ body: { success: true as const, data: role, message: 'Role created' }, location: `${fastify.prefix}/${role.id}` }))
  })

  for (const method of ['PUT', 'PATCH'] as const) {
    fastify.route({
      method,
      url: '/:id',
      schema: roleSchemas.update(method),
      onRequest: fastify.can('role-edit'),
      handler: async (request, reply) => {
        const { id } = request.params
        const { name, permission } = request.body
        checkPolicy(request.body)
        // A replace leaves out what the role has none of: a policy of its own.
        const policy = method === 'PUT' ? { rateLimit: request.body.rate_limit ?? null, rateQuota: request.body.rate_quota ?? null } : { rateLimit: request.body.rate_limit, rateQuota: request.body.rate_quota }
        const role = await request.updateRecord(reply, kind, id, async (trx, current) => {
          const before = current.permissions.map(p => p.name)
          if (current.name === ADMIN_ROLE) {
            if (name !== undefined && name !== ADMIN_ROLE) throw conflict('The Admin role cannot be renamed')
            if (permission && before.some(p => !permission.includes(p))) throw conflict('The Admin role cannot lose a permission')
          }
          const permissionIds = await changeable(permission ?? before, before, request.user.permissions, trx)
          return repository.update(id, {
            name,
            permissionIds: permission && permissionIds,
            rateLimit: policyChange(current.rate_limit, policy.rateLimit),
            rateQuota: policyChange(current.rate_quota, policy.rateQuota)
          }, trx)
        })
        return { success: true as const, data: role, message: 'Role updated' }
      }
    })
  }

  fastify.delete('/:id', { schema: roleSchemas.destroy, onRequest: fastify.can('role-delete') }, async (request) => {
    const { id } = request.params
    const role = await request.deleteRecord(kind, id, async (trx, current) => {
      if (current.name === ADMIN_ROLE) throw conflict('The Admin role cannot be deleted')
      // Deleting a role takes its permissions from its holders: the caller must hold them all.
      await changeable([], current.permissions.map(p => p.name), request.user.permissions, trx)
      await repository.remove(id, trx)
    })
    return { success: true as const, data: role, message: 'Role deleted' }
  })
}

export default roles
