import fp from 'fastify-plugin'
import type { Knex } from 'knex'
import type { CallerCache } from '../../lib/auth/caller-cache.js'
import { apiKeyHash, apiKeyPrefix, newApiKey } from '../../lib/auth/api-keys.js'
import { LastUse } from '../../lib/auth/last-use.js'
import { prepare, type Database } from '../../lib/db/prepared-query.js'

declare module 'fastify' {
  interface FastifyInstance {
    apiKeysRepository: ApiKeysRepository
  }
}

/** A key as its owner sees it: never its secret. */
export interface ApiKeyRecord {
  id: number
  user_id: number
  name: string
  prefix: string
  permissions: string[]
  created_at: string
  expires_at: string | null
  last_used_at: string | null
}

/** What a key's check finds: whose it is, what it may do now, and until when. */
export interface KeyCaller {
  id: number
  user_id: number
  permissions: string[]
  /** Seconds since the epoch, or null for a key that does not expire. */
  expires_at: number | null
}

const KEY_COLUMNS = 'id::float8 as id, user_id, name, prefix, permissions, created_at, expires_at, last_used_at'

function createApiKeysRepository (database: Database, cache: CallerCache, cacheSize: number) {
  const { knex } = database
  const lastUse = new LastUse(cacheSize, id => knex('api_keys').where('id', id)
    .where(qb => qb.whereNull('last_used_at').orWhere('last_used_at', '<', knex.raw("now() - interval '1 minute'")))
    .update({ last_used_at: knex.fn.now() }))

  // On every request of a key the cache does not hold: prepared, as the token check is. The
  // key's permissions are its own that its owner still holds.
  const caller = prepare<[hash: string], KeyCaller>(database, 'api-keys.caller', hash => knex.raw(`
    select k.id::float8 as id, k.user_id, floor(extract(epoch from k.expires_at))::float8 as expires_at,
      array(select unnest(k.permissions)
        intersect
        select p.name from user_roles ur
          join role_permissions rp on rp.role_id = ur.role_id
          join permissions p on p.id = rp.permission_id
        where ur.user_id = k.user_id) as permissions
    from api_keys k join users u on u.id = k.user_id
    where k.hash = decode(?, 'hex') and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > now()) and u.deleted_at is null`, [hash]))

  return {
    /** Makes a key: its record, and its secret, which nothing keeps. */
    async create (userId: number, key: { name: string, permissions: string[], expiresAt: string | undefined }, trx: Knex): Promise<{ record: ApiKeyRecord, secret: string }> {
      const secret = newApiKey()
      const [record] = await trx('api_keys').insert({
        user_id: userId,
        name: key.name,
        prefix: apiKeyPrefix(secret),
        hash: knex.raw('decode(?, \'hex\')', [apiKeyHash(secret)]),
        permissions: key.permissions,
        expires_at: key.expiresAt ?? null
      }).returning(knex.raw(KEY_COLUMNS))
      return { record: record as ApiKeyRecord, secret }
    },

    /** The user's keys not revoked, expired ones too, the newest first. */
    async list (userId: number): Promise<ApiKeyRecord[]> {
      return knex('api_keys').select(knex.raw(KEY_COLUMNS)).where('user_id', userId).whereNull('revoked_at').orderBy('id', 'desc')
    },

    /** The key, if not revoked, locked until `trx` ends (as its revocation's UPDATE locks it). */
    async lock (id: number, trx: Knex): Promise<ApiKeyRecord | undefined> {
      if (!Number.isSafeInteger(id)) return undefined
      return trx('api_keys').first(trx.raw(KEY_COLUMNS)).where('id', id).whereNull('revoked_at').forNoKeyUpdate()
    },

    /** Revokes the key, locked by `lock` in `trx`: at once on this instance, on the others by notification. */
    async revoke (id: number, trx: Knex): Promise<void> {
      await trx('api_keys').where('id', id).update({ revoked_at: trx.fn.now() })
      cache.afterCommit(trx, callers => callers.forgetKey(id))
    },

    /** Revokes every key of the user, as `revoke` does one: the keys as they were. */
    async revokeAll (userId: number, trx: Knex): Promise<ApiKeyRecord[]> {
      const revoked = await trx('api_keys').where('user_id', userId).whereNull('revoked_at')
        .update({ revoked_at: trx.fn.now() }).returning(trx.raw(KEY_COLUMNS)) as ApiKeyRecord[]
      cache.afterCommit(trx, callers => { for (const key of revoked) callers.forgetKey(key.id) })
      return revoked
    },

    /** The key of this secret, if it holds: not revoked nor expired, its owner not deleted. */
    async caller (secret: string): Promise<KeyCaller | undefined> {
      return (await caller([apiKeyHash(secret)])).rows[0]
    },

    /** Notes that the key was used now (lib/auth/last-use.ts). */
    touch: (id: number, now?: number) => lastUse.note(id, now)
  }
}

export type ApiKeysRepository = ReturnType<typeof createApiKeysRepository>

/** Data access for API keys. Secrets never reach it but to be digested. */
export default fp(async (fastify) => {
  fastify.decorate('apiKeysRepository', createApiKeysRepository(fastify.database, fastify.callerCache, fastify.config.auth.cacheSize))
}, { name: 'api-keys-repository', dependencies: ['knex', 'config', 'caller-cache'] })
