import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import type { VerificationMail } from '../../../../plugins/app/address-verification.js'
import { InvalidFields } from '../../../../lib/http/invalid-fields.js'
import { CodedError } from '../../../../lib/http/error-codes.js'
import { confirmedPassword } from '../../../../lib/auth/passwords.js'
import { ADMIN_ROLE } from '../roles/schema.js'
import { representationTagger } from '../../../../lib/http/entity-tags.js'
import { NamedRef } from '../../../../schemas/common.js'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import { apiKeysRepository } from '../keys/repository.js'
import { mfaRepository } from '../profile/mfa/repository.js'
import { rolesRepository } from '../roles/repository.js'
import adminAccount from './admin-account.js'
import { usersRepository } from './repository.js'
import { User, userListFields, usersTag, userSchemas, userSharedSchemas } from './schema.js'

/**
 * A user's tag is the digest of the user as shown, roles included: a change of their roles, or
 * of a role's name, changes it. Every write of a user holds the Admin role's lock (the kind's
 * `lock`, below), so an `If-Match` checked in the write's transaction holds until it commits.
 */
const userTag = representationTagger(User, [NamedRef])

/**
 * `/api/users`: users and their roles, behind the user-* permissions, and the administrator made
 * at start-up (admin-account.ts). Their data access is repository.ts, which the folders that
 * act on users import too (login, the profile, API keys, npm run reset-password); a password
 * check reads through lib/auth/credential-queries.ts.
 */
const users: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: usersTag, schemas: userSharedSchemas, events: { resource: 'user', record: User } })
  await fastify.register(adminAccount)
  const repository = usersRepository(fastify.database, fastify.callerCache)
  const roleRepository = rolesRepository(fastify.database, fastify.callerCache)
  const keyRepository = apiKeysRepository(fastify.database, fastify.callerCache)
  const factors = mfaRepository(fastify.database, fastify.callerCache)
  const { forbidden, notFound } = fastify.httpErrors
  const userNotFound = (id: number) => notFound(`User ${id} not found`)
  const kind: RecordKind<User> = {
    resource: 'user',
    // The Admin role's lock first, as every change touching Admin or its holders takes it.
    lock: async (id, trx) => {
      await roleRepository.lockAdmin(trx)
      return repository.findLocked(id, trx)
    },
    tag: userTag,
    notFound: userNotFound
  }

  /**
   * The ids of the named roles. Every permission of a role the user does not hold yet
   * must be held by the caller: nobody grants more than they have.
   */
  async function grantableRoles (names: string[], current: string[], held: Set<string>, trx: Knex): Promise<number[]> {
    const unknown = await roleRepository.unknownNames(names, trx)
    if (unknown.length > 0) throw new InvalidFields({ roles: unknown.map(name => `unknown role: ${name}`) })
    const roles = await roleRepository.findByNames(names, trx)
    const lacking = roles
      .filter(role => !current.includes(role.name))
      .flatMap(role => role.permissions.map(p => p.name))
      .filter(name => !held.has(name))
    if (lacking.length > 0) throw forbidden(`You cannot grant permissions you lack: ${[...new Set(lacking)].join(', ')}`)
    return roles.map(role => role.id)
  }

  /**
   * Nobody acts on a user who holds more than they do: editing or deleting a user who holds a
   * permission the caller lacks is refused, as granting it would be.
   */
  async function mayActOn (id: number, held: Set<string>, action: string, trx: Knex) {
    const lacking = await repository.permissionsBeyond(id, held, trx)
    if (lacking.length > 0) throw forbidden(`You cannot ${action} a user who holds permissions you lack: ${lacking.join(', ')}`)
  }

  /**
   * A key acts for its owner, never on them: the owner's own account (name, address, password,
   * roles, the account itself) changes with an access token, as the profile does.
   */
  function notByOwnKey (request: FastifyRequest, id: number) {
    if (request.user.keyId !== undefined && request.user.id === id) {
      throw new CodedError('access_token_required', 'An API key cannot change or delete the user it belongs to: use an access token')
    }
  }

  /**
   * The caller's own address or password changes as the profile's do, with their password (or
   * a session reauthenticated in the last 5 minutes): an access token alone (an administrator's
   * stolen one) cannot take its own account over, nor keep its keys through it (a caller's own
   * password change leaves their keys).
   */
  const CURRENT_PASSWORD_NEEDED = 'is needed to change your own e-mail address or password'
  const REMOVE_FACTOR_NEEDS = 'is needed to turn a user\'s second factor off'

  /** Refuses to leave no user holding Admin. */
  async function keepAnAdmin (trx: Knex) {
    if (await repository.countAdmins(trx) === 0) throw new CodedError('last_admin', 'The last user holding Admin cannot be deleted or lose it')
  }

  fastify.get('/', { schema: userSchemas.index, onRequest: fastify.can('user-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, userListFields)
    return fastify.lists.send(reply, list, await repository.query(list), { path: fastify.prefix, envelope: true })
  })

  fastify.get('/:id', { schema: userSchemas.show, onRequest: fastify.can('user-list') }, async (request, reply) => {
    const user = await repository.find(request.params.id)
    if (!user) throw userNotFound(request.params.id)
    return reply.sendTagged(userTag(user), { success: true as const, data: user })
  })

  fastify.post('/', { schema: userSchemas.store, onRequest: fastify.can('user-create') }, async (request, reply) => {
    const { name, email, password, c_password: confirmation, roles = [] } = request.body
    const passwordHash = await fastify.passwords.hash(confirmedPassword(password, confirmation))
    let mail: VerificationMail | null = null
    const sent = await request.createRecord(reply, kind, async trx => {
      const roleIds = await grantableRoles(roles, [], request.user.permissions, trx)
      const user = await repository.create({ name, email, passwordHash, roleIds }, trx)
      mail = await fastify.addressVerification.issue(trx, user.id, user.email, false)
      return user
    }, user => ({ body: { success: true as const, data: user, message: 'User created' }, location: `${fastify.prefix}/${user.id}` }))
    fastify.addressVerification.send(request, mail)
    return sent
  })

  for (const method of ['PUT', 'PATCH'] as const) {
    fastify.route({
      method,
      url: '/:id',
      schema: userSchemas.update(method),
      onRequest: fastify.can('user-edit'),
      handler: async (request, reply) => {
        const { id } = request.params
        notByOwnKey(request, id)
        // A missing or malformed If-Match is refused before the password is checked (and counted).
        request.ifMatch()
        const { name, email, password, c_password: confirmation, roles, current_password: currentPassword } = request.body
        const own = request.user.id === id
        const newPassword = password !== undefined || confirmation !== undefined
        const proofNeeded = currentPassword !== undefined || (own && newPassword)
        const verified = proofNeeded ? await request.checkCurrentPassword(reply, currentPassword, CURRENT_PASSWORD_NEEDED) : undefined
        /* c8 ignore next -- a client gone, or answered 503, before its hash's turn (plugins/app/password-check.ts) */
        if (proofNeeded && verified === undefined) return
        const passwordHash = newPassword ? await fastify.passwords.hash(confirmedPassword(password ?? '', confirmation)) : undefined
        let mail: VerificationMail | null = null
        const user = await request.updateRecord(reply, kind, id, async (trx, current) => {
          // The caller's own row, locked: the password checked is still theirs (no recovery
          // committed since the check).
          if (own && verified !== undefined) await request.passwordUnchanged(reply, trx, verified)
          // A new address of one's own: the session's reauthentication, read under the lock.
          if (own && verified === undefined && email !== undefined && email !== current.email) await request.checkCurrentPassword(reply, undefined, CURRENT_PASSWORD_NEEDED, trx)
          await mayActOn(id, request.user.permissions, 'edit', trx)
          const currentRoles = current.roles.map(role => role.name)
          const roleIds = roles && await grantableRoles(roles, currentRoles, request.user.permissions, trx)
          const address = await fastify.addressVerification.change(trx, current, email)
          mail = address.mail
          // A password set by someone else is the account's recovery (below).
          const recovery = passwordHash !== undefined && request.user.id !== id ? true : undefined
          const updated = await repository.update(id, { name, ...address.update, passwordHash, roleIds, recovery }, trx)
          if (currentRoles.includes(ADMIN_ROLE)) await keepAnAdmin(trx)
          // A new password ends every session of the user, but the one a user changed their own
          // in. Set by someone else, it is the account's recovery: the user's API keys end too
          // (whoever held the account meanwhile may have made some).
          if (passwordHash !== undefined) {
            const { id: callerId, jti, exp, sessionId } = request.user
            if (callerId === id) {
              await repository.endAllSessions(id, trx, { jti, expiresAt: new Date(exp * 1000), sessionId })
            } else {
              await repository.endAllSessions(id, trx)
              for (const key of await keyRepository.revokeAll(id, trx)) {
                await request.audit(trx, { action: 'revoke', resource: 'key', id: key.id, before: key })
              }
            }
          }
          return updated
        }, { secrets: passwordHash === undefined ? [] : ['password'] })
        fastify.addressVerification.send(request, mail)
        return { success: true as const, data: user, message: mail === null ? 'User updated' : 'User updated; the new e-mail address replaces the old one once the link mailed to it is followed' }
      }
    })
  }

  // A user's lost authenticator app (the phone, and its recovery codes with it): turned off by
  // someone who may edit them, with their own password again (or their session's word), as
  // turning one's own off takes it: a stolen access token strips nobody's second factor.
  // Not with an API key, as no route of second factors takes one.
  fastify.delete('/:id/mfa', { schema: userSchemas.removeFactor, onRequest: [fastify.can('user-edit'), fastify.refuseKeys] }, async (request, reply) => {
    const { id } = request.params
    const proof = await request.checkCurrentPassword(reply, request.body.current_password, REMOVE_FACTOR_NEEDS)
    /* c8 ignore next -- a client gone, or answered 503, before its hash's turn (plugins/app/password-check.ts) */
    if (proof === undefined) return
    await request.recordEvents(async trx => {
      // The Admin role's lock first, as every change of a user takes it; then the caller's row,
      // then the user's.
      await roleRepository.lockAdmin(trx)
      await request.passwordUnchanged(reply, trx, proof)
      if (await repository.findLocked(id, trx) === undefined) throw userNotFound(id)
      await mayActOn(id, request.user.permissions, 'edit', trx)
      if (!await factors.disableTotp(id, trx)) throw new CodedError('mfa_not_enrolled', `User ${id} has no authenticator app`)
      return { result: null, events: [{ action: 'mfa-disable', resource: 'user', id, after: { factor: 'totp' } }] }
    })
    return { success: true as const, data: null, message: 'The user\'s authenticator app is off: their logins take no second step, until they enrol one again' }
  })

  fastify.delete('/:id', { schema: userSchemas.destroy, onRequest: fastify.can('user-delete') }, async (request) => {
    const { id } = request.params
    notByOwnKey(request, id)
    const user = await request.deleteRecord(kind, id, async (trx, current) => {
      await mayActOn(id, request.user.permissions, 'delete', trx)
      await repository.remove(id, trx)
      if (current.roles.some(role => role.name === ADMIN_ROLE)) await keepAnAdmin(trx)
    })
    return { success: true as const, data: user, message: 'User deleted' }
  })
}

export default users
