import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { InvalidFields } from '../../../../lib/http/invalid-fields.js'
import { aboveOwner, keyPolicy, ownPolicyProblems, policyChange, type OwnPolicy, type RatePolicy } from '../../../../lib/limits/rate-policy.js'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import { usersRepository } from '../users/repository.js'
import { apiKeysRepository, type ApiKeyRecord } from './repository.js'
import { keySchemas, keySharedSchemas, keysTag } from './schema.js'

/** The first instant a timestamp of a four-digit year cannot show, in UTC. */
const LAST_INSTANT = Date.UTC(10000, 0, 1)

/** `/api/keys`: API keys, made and managed with an access token. */
const keys: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: keysTag, schemas: keySharedSchemas })
  const users = usersRepository(fastify.database, fastify.callerCache)
  const repository = apiKeysRepository(fastify.database, fastify.callerCache)
  const { forbidden, notFound } = fastify.httpErrors
  const missing = (id: number) => notFound(`API key ${id} not found`)
  // Audited only: clients do not follow keys through the change outbox; no read tags one.
  const kind: RecordKind<ApiKeyRecord> = { resource: 'key', lock: repository.lock, notFound: missing, tag: false, followed: false }
  // No chains of keys: a key neither makes nor manages keys.
  fastify.addHook('onRequest', fastify.refuseKeys)

  /**
   * Whether the caller may manage the keys of `userId`: their own, or, with `user-edit`, those
   * of a user who holds nothing the caller lacks (as editing that user needs).
   */
  async function mayManage (request: FastifyRequest, userId: number, hidden: () => Error, trx?: Knex) {
    const { id, permissions } = request.user
    if (userId === id) return
    if (!permissions.has('user-edit')) throw hidden()
    const lacking = await users.permissionsBeyond(userId, permissions, trx)
    if (lacking.length > 0) throw forbidden(`You cannot manage the keys of a user who holds permissions you lack: ${lacking.join(', ')}`)
  }

  /**
   * 400 if the parts of a key's own policy a request sets are not ones the service reads, or
   * are above its owner's (a part it leaves as it is may be above since a role changed: the
   * owner's allowance holds the key to theirs anyway).
   */
  function checkPolicy (own: OwnPolicy, owner: RatePolicy) {
    const problems = ownPolicyProblems(own, false)
    const policy = Object.keys(problems).length === 0 ? keyPolicy(own) : undefined
    if (policy !== undefined) Object.assign(problems, aboveOwner(policy, owner))
    if (Object.keys(problems).length > 0) throw new InvalidFields(problems)
  }

  fastify.get('/', { schema: keySchemas.index }, async (request) => {
    const userId = request.query.user_id ?? request.user.id
    await mayManage(request, userId, () => forbidden('Listing another user\'s keys needs the user-edit permission'))
    return { success: true as const, data: await repository.list(userId) }
  })

  // The maker's password, as a new password needs it: a stolen access token alone makes no key
  // to outlast the recovery of the account.
  fastify.post('/', { schema: keySchemas.store }, async (request, reply) => {
    const { name, permissions, expires_at: expiresAt, current_password: currentPassword, rate_limit: rateLimit, rate_quota: rateQuota } = request.body
    checkPolicy({ rate_limit: rateLimit ?? null, rate_quota: rateQuota ?? null }, request.user.policy)
    if (expiresAt !== undefined && !(Date.parse(expiresAt) > Date.now())) throw new InvalidFields({ expires_at: ['must be in the future'] })
    // A time of year 9999 with a western offset is in year 10000 in UTC, which PostgreSQL keeps
    // but no ISO 8601 timestamp of four digits can show: the key could never be listed.
    if (expiresAt !== undefined && Date.parse(expiresAt) >= LAST_INSTANT) throw new InvalidFields({ expires_at: ['must be before 10000-01-01T00:00:00Z'] })
    const lacking = permissions.filter(permission => !request.user.permissions.has(permission))
    if (lacking.length > 0) throw forbidden(`A key cannot hold permissions you lack: ${lacking.join(', ')}`)
    const verified = await request.checkCurrentPassword(reply, currentPassword, 'is needed to make an API key')
    /* c8 ignore next -- a client gone, or answered 503, before its hash's turn (plugins/app/password-check.ts) */
    if (verified === undefined) return
    let secret = ''
    // Not replayed: the answer holds the secret, which nothing keeps.
    return request.createRecord(reply, kind, async trx => {
      // The user's row first, as every write of a user's sessions and keys: a recovery that
      // committed since the check (and revoked the user's keys) is seen, not outlived.
      await request.passwordUnchanged(reply, trx, verified)
      const made = await repository.create(request.user.id, { name, permissions, expiresAt, rate_limit: rateLimit, rate_quota: rateQuota }, trx)
      secret = made.secret
      return made.record
    }, record => ({ body: { success: true as const, data: record, secret, message: 'API key made: its secret is shown this once' }, location: fastify.prefix }), { replayed: false })
  })

  fastify.patch('/:id', { schema: keySchemas.update }, async (request, reply) => {
    const { name, rate_limit: rateLimit, rate_quota: rateQuota } = request.body
    const key = await request.updateRecord(reply, kind, request.params.id, async (trx, key) => {
      await mayManage(request, key.user_id, () => missing(key.id), trx)
      if (typeof rateLimit === 'string' || typeof rateQuota === 'string') {
        const owner = key.user_id === request.user.id ? request.user.policy : await fastify.rateLimits.policyOf(key.user_id, trx)
        checkPolicy({ rate_limit: rateLimit ?? null, rate_quota: rateQuota ?? null }, owner)
      }
      return repository.update(key.id, { name, rate_limit: policyChange(key.rate_limit, rateLimit), rate_quota: policyChange(key.rate_quota, rateQuota) }, trx)
    })
    return { success: true as const, data: key, message: 'API key updated' }
  })

  fastify.delete('/:id', { schema: keySchemas.destroy }, async (request) => {
    const revoked = await request.deleteRecord(kind, request.params.id, async (trx, key) => {
      await mayManage(request, key.user_id, () => missing(key.id), trx)
      await repository.revoke(key.id, trx)
    }, { action: 'revoke' })
    return { success: true as const, data: revoked, message: 'API key revoked' }
  })
}

export default keys
