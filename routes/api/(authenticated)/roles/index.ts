import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { page } from '../../../../lib/paging.js'
import { InvalidFields } from '../../../../lib/invalid-fields.js'
import { ADMIN_ROLE } from '../../../../plugins/roles-repository.js'
import { roleSchemas } from './schema.js'

/** `/api/roles`: roles and their permissions, behind the role-* permissions. */
const roles: FastifyPluginAsyncTypebox = async (fastify) => {
  const repository = fastify.rolesRepository
  const { conflict, forbidden, notFound } = fastify.httpErrors
  const roleNotFound = (id: number) => notFound(`Role ${id} not found`)

  /** The ids of the named permissions, all of which the caller must hold themselves. */
  async function grantable (names: string[], held: Set<string>): Promise<number[]> {
    const known = new Map((await repository.permissions()).map(p => [p.name, p.id]))
    const unknown = names.filter(name => !known.has(name))
    if (unknown.length > 0) {
      throw new InvalidFields({ permission: unknown.map(name => `unknown permission: ${name}`) })
    }
    const lacking = names.filter(name => !held.has(name))
    if (lacking.length > 0) throw forbidden(`You cannot grant permissions you lack: ${lacking.join(', ')}`)
    return names.map(name => known.get(name)!)
  }

  fastify.get('/', { schema: roleSchemas.index, onRequest: fastify.can('role-list') }, async (request, reply) => {
    const { limit, after } = request.query
    return { success: true as const, data: page(await repository.list({ limit, after }), limit, reply, fastify.prefix) }
  })

  fastify.get('/:id', { schema: roleSchemas.show, onRequest: fastify.can('role-list') }, async (request) => {
    const role = await repository.find(request.params.id)
    if (!role) throw roleNotFound(request.params.id)
    return { success: true as const, data: role }
  })

  fastify.post('/', { schema: roleSchemas.store, onRequest: fastify.can('role-create') }, async (request, reply) => {
    const permissionIds = await grantable(request.body.permission, request.user.permissions)
    const role = await fastify.knex.transaction(trx => repository.create(request.body.name, permissionIds, trx))
    return reply.code(201).header('location', `${fastify.prefix}/${role.id}`)
      .send({ success: true as const, data: role, message: 'Role created' })
  })

  for (const method of ['PUT', 'PATCH'] as const) {
    fastify.route({
      method,
      url: '/:id',
      schema: roleSchemas.update(method),
      onRequest: fastify.can('role-edit'),
      handler: async (request) => {
        const { id } = request.params
        const { name, permission } = request.body
        const role = await fastify.knex.transaction(async trx => {
          await repository.lockAdmin(trx)
          const current = await repository.find(id, trx)
          if (!current) throw roleNotFound(id)
          const after = permission ?? current.permissions.map(p => p.name)
          const permissionIds = await grantable(after, request.user.permissions)
          if (current.name === ADMIN_ROLE) {
            if (name !== undefined && name !== ADMIN_ROLE) throw conflict('The Admin role cannot be renamed')
            if (current.permissions.some(p => !after.includes(p.name))) throw conflict('The Admin role cannot lose a permission')
          }
          return repository.update(id, { name, permissionIds: permission && permissionIds }, trx)
        })
        return { success: true as const, data: role, message: 'Role updated' }
      }
    })
  }

  fastify.delete('/:id', { schema: roleSchemas.destroy, onRequest: fastify.can('role-delete') }, async (request) => {
    const { id } = request.params
    const role = await fastify.knex.transaction(async trx => {
      await repository.lockAdmin(trx)
      const current = await repository.find(id, trx)
      if (!current) throw roleNotFound(id)
      if (current.name === ADMIN_ROLE) throw conflict('The Admin role cannot be deleted')
      await repository.remove(id, trx)
      return current
    })
    return { success: true as const, data: role, message: 'Role deleted' }
  })
}

export default roles
