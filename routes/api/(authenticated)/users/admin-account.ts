import { randomBytes } from 'node:crypto'
import fp from 'fastify-plugin'
import knex from 'knex'
import { knexConfig, startupKnexConfig } from '../../../../lib/db/knex-config.js'
import { credentialQueries } from '../../../../lib/auth/credential-queries.js'
import { ADMIN_ROLE } from '../roles/schema.js'
import { usersRepository } from './repository.js'

export const DEFAULT_ADMIN_EMAIL = 'admin@example.com'

/** The advisory lock that instances starting together take around this check (any shared constant). */
const BOOTSTRAP_LOCK = 7_355_609
/**
 * Makes sure an administrator exists: the user of ADMIN_EMAIL / ADMIN_PASSWORD when set
 * (an existing user of that address keeps their password and gains Admin); else, where
 * the configuration asks for it (the embedded database) and nobody holds Admin,
 * admin@example.com with a random password that is logged once. The users' routes register it:
 * their data access makes the administrator.
 */
export default fp(async (fastify) => {
  const { adminEmail, adminPassword, generateAdmin } = fastify.config.auth
  const users = usersRepository(fastify.database, fastify.callerCache)
  const credentials = credentialQueries(fastify.database)

  /**
   * Gives the user of this address Admin, creating them with this password if needed; true
   * when created. With `onlyIfNone`, does nothing while someone holds Admin.
   */
  async function ensureAdmin (email: string, password: string, onlyIfNone = false): Promise<boolean> {
    // A connection of its own, which may take its time, as the migration's (lib/db/knex-config.ts).
    // Hashed before the transaction, not in it: a hash waits its turn among the hashing threads,
    // and a transaction idle that long (DB_IDLE_IN_TRANSACTION_TIMEOUT on a busy machine) is
    // ended by PostgreSQL, and start-up with it.
    const passwordHash = await fastify.passwords.hash(password)
    const startupDb = knex({ ...startupKnexConfig(knexConfig(fastify.config, { logger: fastify.log })), pool: { min: 0, max: 1 } })
    try {
      return await startupDb.transaction(async trx => {
        // Serialised, so that instances starting together create one administrator.
        await trx.raw('select pg_advisory_xact_lock(?)', [BOOTSTRAP_LOCK])
        if (onlyIfNone && await users.countAdmins(trx) > 0) return false
        // The role the first migration made, by its name as the users' routes find roles.
        const admin: { id: number } = await trx('roles').whereRaw('lower(name) = lower(?)', [ADMIN_ROLE]).first('id')
        const existing = await credentials.find(email, trx)
        const userId = existing?.id ??
          // Its address the operator's, who named it: verified.
          (await users.create({ name: 'Administrator', email, passwordHash, roleIds: [], emailVerified: true }, trx)).id
        await trx('user_roles').insert({ user_id: userId, role_id: admin.id }).onConflict(['user_id', 'role_id']).ignore()
        return existing === undefined
      })
    } finally {
      await startupDb.destroy()
    }
  }

  if (adminEmail !== undefined && adminPassword !== undefined) {
    await ensureAdmin(adminEmail, adminPassword)
  } else if (generateAdmin) {
    const password = randomBytes(12).toString('base64url')
    if (await ensureAdmin(DEFAULT_ADMIN_EMAIL, password, true)) {
      fastify.log.warn({ email: DEFAULT_ADMIN_EMAIL, password }, 'created the administrator: this password is shown once only')
    }
  }
}, { name: 'admin-account', dependencies: ['config', 'passwords', 'caller-cache'] })
