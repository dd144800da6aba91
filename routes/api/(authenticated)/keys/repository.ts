import type { Static } from '@sinclair/typebox'
import type { Knex } from 'knex'
import type { CallerCache } from '../../../../lib/auth/caller-cache.js'
import { apiKeyHash, apiKeyPrefix, newApiKey } from '../../../../lib/auth/api-keys.js'
import type { Database } from '../../../../lib/db/prepared-query.js'
import { oncePerDatabase } from '../../../../lib/db/once-per-database.js'
import type { OwnPolicy } from '../../../../lib/limits/rate-policy.js'
import type { ApiKey } from './schema.js'

/** A key's own policy as a write sets it: null for none of its own, absent to leave it. */
type KeyPolicy = Partial<OwnPolicy>

/** A key as its owner sees it: never its secret. */
export type ApiKeyRecord = Static<typeof ApiKey>

const KEY_COLUMNS = 'id::float8 as id, user_id, name, prefix, permissions, created_at, expires_at, last_used_at, rate_limit, rate_quota'

function createApiKeysRepository (database: Database, cache: CallerCache) {
  const { knex } = database

  return {
    /** Makes a key: its record, and its secret, which nothing keeps. */
    async create (userId: number, key: { name: string, permissions: string[], expiresAt: string | undefined } & KeyPolicy, trx: Knex): Promise<{ record: ApiKeyRecord, secret: string }> {
      const secret = newApiKey()
      const [record] = await trx('api_keys').insert({
        user_id: userId,
        name: key.name,
        prefix: apiKeyPrefix(secret),
        hash: knex.raw('decode(?, \'hex\')', [apiKeyHash(secret)]),
        permissions: key.permissions,
        expires_at: key.expiresAt ?? null,
        rate_limit: key.rate_limit ?? null,
        rate_quota: key.rate_quota ?? null
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

    /** Renames the key, locked by `lock` in `trx`, or sets its policy: at once on this instance, on the others by notification. */
    async update (id: number, changes: { name?: string | undefined } & KeyPolicy, trx: Knex): Promise<ApiKeyRecord> {
      const set = Object.fromEntries(Object.entries(changes).filter(([, value]) => value !== undefined))
      // A policy sent in other words, nothing else: nothing to write.
      if (Object.keys(set).length === 0) return await trx('api_keys').first(trx.raw(KEY_COLUMNS)).where('id', id) as ApiKeyRecord
      const [record] = await trx('api_keys').where('id', id).update(set).returning(trx.raw(KEY_COLUMNS))
      cache.afterCommit(trx, callers => callers.forgetKey(id))
      return record as ApiKeyRecord
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
    }
  }
}

/**
 * Data access for API keys, for the keys' routes and the users' (a password another sets revokes
 * them). Secrets never reach it but to be digested.
 */
export const apiKeysRepository = oncePerDatabase(createApiKeysRepository)
