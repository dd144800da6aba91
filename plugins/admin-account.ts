import { randomBytes } from 'node:crypto'
import fp from 'fastify-plugin'
import { hashPassword } from '../lib/passwords.js'
import { ADMIN_ROLE } from './roles-repository.js'

export const DEFAULT_ADMIN_EMAIL = 'admin@example.com'

/**
 * Makes sure an administrator exists: the one of ADMIN_EMAIL / ADMIN_PASSWORD when set
 * (an existing user of that address keeps their password and gains Admin), else, on the
 * embedded database only, admin@example.com with a random password printed once.
 */
export default fp(async (fastify) => {
  const { adminEmail, adminPassword } = fastify.config.auth
  const embedded = fastify.config.db === null
  if (adminEmail === undefined && !embedded) return

  const email = adminEmail ?? DEFAULT_ADMIN_EMAIL
  const existing = await fastify.usersRepository.findCredentials(email)
  if (existing === undefined && adminEmail === undefined && await hasAdmin()) return
  const generated = adminPassword === undefined && existing === undefined ? randomBytes(12).toString('base64url') : undefined

  await fastify.knex.transaction(async trx => {
    const [admin] = await fastify.rolesRepository.findByNames([ADMIN_ROLE], trx)
    const userId = existing?.id ?? (await fastify.usersRepository.create({
      name: 'Administrator', email, passwordHash: await hashPassword((adminPassword ?? generated)!), roleIds: []
    }, trx)).id
    await trx('user_roles').insert({ user_id: userId, role_id: admin!.id }).onConflict(['user_id', 'role_id']).ignore()
  })
  if (generated) {
    fastify.log.warn({ email, password: generated }, 'created the administrator: this password is shown once only')
  }

  async function hasAdmin () {
    return fastify.knex.transaction(trx => fastify.usersRepository.countAdmins(trx)).then(count => count > 0)
  }
}, { name: 'admin-account', dependencies: ['config', 'users-repository', 'roles-repository'] })
