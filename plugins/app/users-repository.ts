import fp from 'fastify-plugin'
import type { Knex } from 'knex'
import type { CallerCache } from '../../lib/auth/caller-cache.js'
import { uniqueConflict } from '../../lib/db/db-errors.js'
import { CodedError } from '../../lib/http/error-codes.js'
import { emailKey } from '../../lib/auth/email.js'
import { ADMIN_ROLE } from '../../schemas/roles.js'
import { User, userListFields } from '../../schemas/users.js'
import { NamedRef } from '../../schemas/common.js'
import { keysetTable } from '../../lib/db/keyset-table.js'
import { holdsFilter } from '../../lib/db/list-sql.js'
import { MAX_ID } from '../../lib/http/limits.js'
import { prepare, type Database } from '../../lib/db/prepared-query.js'
import { countAttempt, type Attempt, type AttemptCount } from './throttle.js'
import type { SessionsRepository } from './sessions-repository.js'

declare module 'fastify' {
  interface FastifyInstance {
    usersRepository: ReturnType<typeof createUsersRepository>
  }
}

export interface NewUser { name: string, email: string, passwordHash: string, roleIds: number[] }
export interface Profile { id: number, name: string, email: string, roles: string[], permissions: string[], created_at: string, updated_at: string }
interface Credentials { id: number, password: string }
/** A login's count under one key, and the user of the e-mail address, if any, on every row. */
type CountedCredentials = AttemptCount & { [column in keyof Credentials]: Credentials[column] | null }
export interface UserUpdate { name?: string | undefined, email?: string | undefined, passwordHash?: string | undefined, roleIds?: number[] | undefined }

function createUsersRepository (database: Database, cache: CallerCache, sessions: SessionsRepository, conflict: (message: string) => Error) {
  const { knex } = database
  const notDeleted = (trx: Knex) => trx('users as u').whereNull('u.deleted_at')
  const columns = (trx: Knex) => ['u.id', 'u.name', 'u.email', 'u.created_at', 'u.updated_at', trx.raw(`coalesce(
      (select json_agg(json_build_object('id', r.id, 'name', r.name) order by r.id)
       from user_roles ur join roles r on r.id = ur.role_id
       where ur.user_id = u.id), '[]') as roles`)]
  const select = (trx: Knex) => notDeleted(trx).select(columns(trx))
  const table = keysetTable<User>(database, {
    name: 'users',
    rows: notDeleted,
    columns: columns(knex),
    schema: User,
    references: [NamedRef],
    fields: userListFields,
    id: 'u.id',
    customFilters: {
      role: holdsFilter('select 1 from user_roles ur join roles r on r.id = ur.role_id where ur.user_id = u.id and lower(r.name) in (select lower(name) from unnest(?::text[]) name)')
    }
  })
  // By the address's key (lib/auth/email.ts): the callers pass emailKey(address).
  const credentialsOf = (key: string) => notDeleted(knex)
    .select('u.id', 'u.password').where('u.email_key', key)

  const queries = {
    credentials: prepare<[key: string], Credentials>(database, 'users.credentials', key => credentialsOf(key).first()),
    countedCredentials: prepare<[windowSeconds: number, ipKey: string, emailCounter: string | null, key: string], CountedCredentials>(
      database, 'users.counted-credentials', (windowSeconds, ipKey, emailCounter, key) => knex
        .with('counts', countAttempt(knex, windowSeconds, ipKey, emailCounter))
        .select('c.key', 'c.hits', 'c.retry_after', 'user.id', 'user.password')
        .from('counts as c')
        .leftJoin(credentialsOf(key).as('user'), knex.raw('true'))),
    profile: prepare<[id: number], Profile>(database, 'users.profile', id => notDeleted(knex).where('u.id', id).first(
      'u.id', 'u.name', 'u.email', 'u.created_at', 'u.updated_at',
      knex.raw(`array(select r.name from user_roles ur join roles r on r.id = ur.role_id
               where ur.user_id = u.id order by r.name) as roles`),
      knex.raw(`array(select distinct p.name from user_roles ur
               join role_permissions rp on rp.role_id = ur.role_id
               join permissions p on p.id = rp.permission_id
               where ur.user_id = u.id order by p.name) as permissions`)
    ))
  }

  const emailTaken = (error: unknown, email: string | undefined) =>
    uniqueConflict(error, 'users_email_unique', () => conflict(`The e-mail address ${email} is taken`))

  async function setRoles (trx: Knex, userId: number, roleIds: number[]) {
    await trx('user_roles').where({ user_id: userId }).delete()
    if (roleIds.length > 0) await trx('user_roles').insert(roleIds.map(roleId => ({ user_id: userId, role_id: roleId })))
  }

  return {
    /** One page of a list of users, as the request asks. */
    query: table.query,

    async find (id: number, trx: Knex = knex): Promise<User | undefined> {
      if (id > MAX_ID) return undefined
      return select(trx).where('u.id', id).first()
    },

    /**
     * The user as they stand, their row locked until `trx` ends: what a change's audit entry
     * tells they were, with no other change of the user committing between this read and the
     * change. Locked first, then read by a statement of its own, which sees whatever a change
     * it waited for committed, roles included (a statement that waits for a row lock sees that
     * row's new version but the rest as it was when it began). FOR NO KEY UPDATE, as an UPDATE
     * of the row locks it: FOR UPDATE would also hold back the inserts that reference the user
     * (a login's session), and a login ending the user's oldest session while a password change
     * waited on it would deadlock with that change.
     */
    async findLocked (id: number, trx: Knex): Promise<User | undefined> {
      if (id > MAX_ID) return undefined
      await trx('users').where({ id }).forNoKeyUpdate().select('id')
      return select(trx).where('u.id', id).first()
    },

    /**
     * The user's password hash, their row locked as `findLocked` locks it: the one a waited-for
     * change committed, undefined for a user deleted meanwhile.
     */
    async lockedPassword (id: number, trx: Knex): Promise<string | undefined> {
      const row: { password: string } | undefined = await notDeleted(trx).where('u.id', id).forNoKeyUpdate().first('u.password')
      return row?.password
    },

    /** What login needs of the user with this address, if there is one. */
    async findCredentials (email: string, trx: Knex = knex): Promise<Credentials | undefined> {
      return (await queries.credentials([emailKey(email)], trx)).rows[0]
    },

    /**
     * Login's lookup, in the statement that counts the attempt: one round trip to PostgreSQL,
     * not two. On two cores the main thread's CPU a login fell from 0.9-1.1 ms to 0.75-0.8.
     */
    async findCredentialsCounting (email: string, attempt: Attempt): Promise<{ counts: AttemptCount[], user: Credentials | undefined }> {
      const { rows } = await queries.countedCredentials([attempt.windowSeconds, attempt.ipKey, attempt.emailCounter, emailKey(email)])
      const [first] = rows
      return { counts: rows, user: first?.id == null ? undefined : { id: first.id, password: first.password! } }
    },

    /** The caller as the profile shows them: role and permission names. */
    async profile (id: number, trx: Knex = knex): Promise<Profile | undefined> {
      return (await queries.profile([id], trx)).rows[0]
    },

    async create (user: NewUser, trx: Knex): Promise<User> {
      try {
        const [{ id }] = await trx('users')
          .insert({ name: user.name, email: user.email, email_key: emailKey(user.email), password: user.passwordHash })
          .returning('id')
        await setRoles(trx, id, user.roleIds)
        return select(trx).where('u.id', id).first()
      } catch (error) {
        throw emailTaken(error, user.email)
      }
    },

    async update (id: number, changes: UserUpdate, trx: Knex): Promise<User> {
      try {
        await trx('users').where({ id }).update({
          ...(changes.name !== undefined && { name: changes.name }),
          ...(changes.email !== undefined && { email: changes.email, email_key: emailKey(changes.email) }),
          ...(changes.passwordHash !== undefined && { password: changes.passwordHash }),
          updated_at: trx.fn.now()
        })
        if (changes.roleIds) {
          await setRoles(trx, id, changes.roleIds)
          cache.afterCommit(trx, callers => callers.forgetUser(id))
        }
        return select(trx).where('u.id', id).first()
      } catch (error) {
        throw emailTaken(error, changes.email)
      }
    },

    /** Soft delete: the row stays, with deleted_at set, and its e-mail address is free again. */
    async remove (id: number, trx: Knex): Promise<void> {
      await trx('users').where({ id }).update({ deleted_at: trx.fn.now() })
      cache.afterCommit(trx, callers => callers.forgetUser(id))
    },

    /** This token stops working; the revocations past their token's expiry are dropped meanwhile. */
    async revokeToken (jti: string, expiresAt: Date, trx: Knex): Promise<void> {
      await trx('revoked_tokens').where('expires_at', '<', trx.fn.now()).delete()
      await trx('revoked_tokens').insert({ jti, expires_at: expiresAt }).onConflict('jti').ignore()
      cache.afterCommit(trx, callers => callers.forgetToken(jti))
    },

    /**
     * Every session of the user ends, and tokens issued before this call stop working, on every
     * instance, but for `keep` (a token of this user's): its session stays (a token of no
     * session stays valid until it expires or all sessions end again).
     */
    async endAllSessions (id: number, trx: Knex = knex, keep?: { jti: string, expiresAt: Date, sessionId: number | undefined }): Promise<void> {
      // The user's row first, as every change of a user locks it first: ending the sessions
      // first, a logout everywhere would deadlock with a password change of the same user.
      const [{ token_generation: generation }] = await trx('users').where({ id }).increment('token_generation', 1).returning('token_generation')
      await sessions.endAll(id, trx, keep?.sessionId)
      if (keep && keep.sessionId === undefined) {
        await trx('kept_tokens').where('expires_at', '<', trx.fn.now()).delete()
        await trx('kept_tokens').insert({ jti: keep.jti, user_id: id, token_generation: generation, expires_at: keep.expiresAt })
          .onConflict('jti').merge(['token_generation'])
      }
      cache.afterCommit(trx, callers => callers.forgetUser(id))
    },

    /** The permissions of the user that `held` lacks: nobody acts on a user who holds more than they do. */
    async permissionsBeyond (id: number, held: Set<string>, trx: Knex = knex): Promise<string[]> {
      return (await this.permissionNames(id, trx)).filter(name => !held.has(name))
    },

    /** The names of the permissions the user's roles give them. */
    async permissionNames (id: number, trx: Knex = knex): Promise<string[]> {
      const rows: { name: string }[] = await trx('user_roles as ur')
        .join('role_permissions as rp', 'rp.role_id', 'ur.role_id')
        .join('permissions as p', 'p.id', 'rp.permission_id')
        .where('ur.user_id', id).distinct('p.name').orderBy('p.name')
      return rows.map(row => row.name)
    },

    /** How many users not deleted hold the Admin role. */
    async countAdmins (trx: Knex): Promise<number> {
      const row = await notDeleted(trx).join('user_roles as ur', 'ur.user_id', 'u.id').join('roles as r', 'r.id', 'ur.role_id')
        .where('r.name', ADMIN_ROLE).countDistinct({ count: 'u.id' }).first()
      return Number(row!.count)
    }
  }
}

/** Data access for users and their roles. Password hashes never leave it but for login. */
export default fp(async (fastify) => {
  fastify.decorate('usersRepository', createUsersRepository(fastify.database, fastify.callerCache, fastify.sessionsRepository, message => new CodedError('email_taken', message)))
}, { name: 'users-repository', dependencies: ['knex', 'sensible', 'caller-cache', 'sessions-repository'] })
