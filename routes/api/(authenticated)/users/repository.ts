import type { Knex } from 'knex'
import type { CallerCache } from '../../../../lib/auth/caller-cache.js'
import { uniqueConflict } from '../../../../lib/db/db-errors.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import { emailKey } from '../../../../lib/auth/email.js'
import { ADMIN_ROLE } from '../roles/schema.js'
import { User, userListFields } from './schema.js'
import { NamedRef } from '../../../../schemas/common.js'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { holdsFilter } from '../../../../lib/db/list-sql.js'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { oncePerDatabase } from '../../../../lib/db/once-per-database.js'
import { prepare, type Database } from '../../../../lib/db/prepared-query.js'
import { endSessions } from '../sessions/repository.js'
import type { Profile } from '../schema.js'

/** A user to make; `emailVerified`: their address is proven already (the administrator an operator names). */
export interface NewUser { name: string, email: string, passwordHash: string, roleIds: number[], emailVerified?: boolean }
/**
 * A change of a user. A new `email` ends a change waiting for verification; `emailVerified`
 * says what becomes of the address's verification: `now`, proven just now (a link followed);
 * `kept`, as it was (the same mailbox, the address in another case); otherwise, with a new
 * `email`, none. `pendingEmail`: an address the user changes to once it is verified.
 */
export interface UserUpdate {
  name?: string | undefined
  email?: string | undefined
  pendingEmail?: string | null | undefined
  emailVerified?: 'now' | 'kept' | undefined
  passwordHash?: string | undefined
  /**
   * A password set by someone other than the user (a reset by mail, a `user-edit` holder's, the
   * operator's): a change of address waiting ends too, as whoever asked for it may be the
   * intruder the recovery shuts out.
   */
  recovery?: true | undefined
  roleIds?: number[] | undefined
}

function createUsersRepository (database: Database, cache: CallerCache) {
  const { knex } = database
  const notDeleted = (trx: Knex) => trx('users as u').whereNull('u.deleted_at')
  const columns = (trx: Knex) => ['u.id', 'u.name', 'u.email', 'u.email_verified_at', 'u.pending_email', 'u.created_at', 'u.updated_at', trx.raw(`coalesce(
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
  const profileQuery = prepare<[id: number], Profile>(database, 'users.profile', id => notDeleted(knex).where('u.id', id).first(
    'u.id', 'u.name', 'u.email', 'u.email_verified_at', 'u.pending_email', 'u.created_at', 'u.updated_at',
    knex.raw(`array(select r.name from user_roles ur join roles r on r.id = ur.role_id
             where ur.user_id = u.id order by r.name) as roles`),
    knex.raw(`array(select distinct p.name from user_roles ur
             join role_permissions rp on rp.role_id = ur.role_id
             join permissions p on p.id = rp.permission_id
             where ur.user_id = u.id order by p.name) as permissions`)
  ))

  const emailTaken = (error: unknown, email: string | undefined) =>
    uniqueConflict(error, 'users_email_unique', () => new CodedError('email_taken', `The e-mail address ${email} is taken`))

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

    /** The caller as the profile shows them: role and permission names. */
    async profile (id: number, trx: Knex = knex): Promise<Profile | undefined> {
      return (await profileQuery([id], trx)).rows[0]
    },

    async create (user: NewUser, trx: Knex): Promise<User> {
      try {
        const [{ id }] = await trx('users')
          .insert({ name: user.name, email: user.email, email_key: emailKey(user.email), password: user.passwordHash, email_verified_at: user.emailVerified === true ? trx.fn.now() : null })
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
          ...(changes.email !== undefined && {
            email: changes.email,
            email_key: emailKey(changes.email),
            pending_email: null,
            ...(changes.emailVerified !== 'kept' && { email_verified_at: changes.emailVerified === 'now' ? trx.fn.now() : null })
          }),
          ...(changes.email === undefined && changes.emailVerified === 'now' && { email_verified_at: trx.fn.now() }),
          ...(changes.pendingEmail !== undefined && { pending_email: changes.pendingEmail }),
          ...(changes.recovery === true && { pending_email: null }),
          ...(changes.passwordHash !== undefined && { password: changes.passwordHash }),
          updated_at: trx.fn.now()
        })
        // A reset token holds for the password and the address it was sent for: either changed, it is void.
        if (changes.passwordHash !== undefined || changes.email !== undefined) await trx('password_resets').where({ user_id: id }).delete()
        if (changes.recovery === true) await trx('email_verifications').where({ user_id: id }).delete()
        if (changes.roleIds) {
          await setRoles(trx, id, changes.roleIds)
          cache.afterCommit(trx, callers => callers.forgetUser(id))
        }
        return select(trx).where('u.id', id).first()
      /* c8 ignore start -- another user took the address between the address's check (plugins/app/address-verification.ts) and this write: the unique index answers, 409 */
      } catch (error) {
        throw emailTaken(error, changes.email)
      }
      /* c8 ignore stop */
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
      await endSessions(trx, cache, qb => {
        qb.where('user_id', id)
        return keep?.sessionId === undefined ? qb : qb.whereNot('id', keep.sessionId)
      }, 'all sessions ended')
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

/**
 * Data access for users and their roles. Password hashes never leave it: a password check reads
 * through lib/auth/credential-queries.ts.
 */
export const usersRepository = oncePerDatabase(createUsersRepository)
