import type { FastifyInstance } from 'fastify'
import { rolesRepository } from '../../../routes/api/(authenticated)/roles/repository.js'
import { sessionsRepository } from '../../../routes/api/(authenticated)/sessions/repository.js'
import { usersRepository } from '../../../routes/api/(authenticated)/users/repository.js'

export const PASSWORD = 'correct horse battery'

let users = 0

/** The app's data access for roles, as its routes have it. */
export const rolesOf = (app: FastifyInstance) => rolesRepository(app.database, app.callerCache)
/** The app's data access for users, as its routes have it. */
export const usersOf = (app: FastifyInstance) => usersRepository(app.database, app.callerCache)
/** The app's data access for sessions, as its routes have it. */
export const sessionsOf = (app: FastifyInstance) => sessionsRepository(app.database, app.callerCache, app.config.auth)

/** A user with the given roles (created directly in the database), and a token from logging in. */
export async function userWithRoles (app: FastifyInstance, roles: string[], email = `user${++users}@example.com`) {
  const user = await app.knex.transaction(async trx => {
    const found = await rolesOf(app).findByNames(roles, trx)
    return usersOf(app).create({ name: 'Test User', email, passwordHash: await app.passwords.hash(PASSWORD), roleIds: found.map(r => r.id) }, trx)
  })
  return { id: user.id, email, token: await login(app, email) }
}

/** A role with exactly these permissions, and this policy of its own (none by default). */
export async function roleWithPermissions (app: FastifyInstance, name: string, permissions: string[], policy: { rateLimit?: string, rateQuota?: string } = {}) {
  const ids = (await rolesOf(app).permissions()).filter(p => permissions.includes(p.name)).map(p => p.id)
  return app.knex.transaction(trx => rolesOf(app).create({ name, permissionIds: ids, rateLimit: policy.rateLimit ?? null, rateQuota: policy.rateQuota ?? null }, trx))
}

export async function login (app: FastifyInstance, email: string, password = PASSWORD): Promise<string> {
  const res = await app.inject({ method: 'POST', url: '/api/login', payload: { email, password } })
  if (res.statusCode !== 200) throw new Error(`login failed: ${res.body}`)
  return res.json().data
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

export const client = {
  name: 'Acme Sp. z o.o.', vat_number: '5252248481', street: 'ul. Prosta 1', city: 'Warszawa', post_code: '00-850', email: 'office@acme.example'
}

/** Inserts the client above straight into the table; its id. */
export async function insertClient (app: FastifyInstance): Promise<number> {
  const [{ id }] = await app.knex('clients').insert(client).returning('id')
  return id
}
