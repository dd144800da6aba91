import type { Knex } from 'knex'
import type { Database } from '../../../../../lib/db/prepared-query.js'
import { oncePerDatabase } from '../../../../../lib/db/once-per-database.js'
import { mailedTokenHash, newMailedToken } from '../../../../../lib/auth/mailed-tokens.js'
import { PASSKEY_TIMEOUT_SECONDS, type StoredPasskey } from '../../../../../lib/auth/passkeys.js'
import type { Passkey } from './schema.js'

/** A passkey found by its credential: whose, and what checks it. */
export type FoundPasskey = StoredPasskey & { id: number, userId: number }

const COLUMNS = ['id', 'name', 'created_at', 'last_used_at'] as const

/**
 * A user's passkeys and the ceremonies under way (migration 20261214000000_passkeys.ts). Every
 * write takes the caller's transaction: the routes audit it in the same one.
 */
function createPasskeysRepository (database: Database) {
  const { knex } = database

  return {
    /** The user's passkeys, oldest first. */
    async list (userId: number): Promise<Passkey[]> {
      return await knex('passkeys').where({ user_id: userId }).orderBy('id').select(COLUMNS)
    },

    /** The credential ids of the user's passkeys: an authenticator that has one makes no other. */
    async credentialIds (userId: number, trx: Knex): Promise<string[]> {
      return (await trx('passkeys').where({ user_id: userId }).select('credential_id') as Array<{ credential_id: string }>).map(row => row.credential_id)
    },

    /**
     * A ceremony's challenge kept for PASSKEY_TIMEOUT_SECONDS, for a registration of the user's,
     * or a login (null): the opaque token that names it. Ceremonies expired go on the way.
     */
    async issueChallenge (userId: number | null, challenge: string, trx: Knex): Promise<string> {
      const { token, hash } = newMailedToken()
      await trx('webauthn_challenges').where('expires_at', '<=', trx.fn.now()).delete()
      await trx('webauthn_challenges').insert({ token_hash: hash, user_id: userId, challenge, expires_at: trx.raw('now() + make_interval(secs => ?)', [PASSKEY_TIMEOUT_SECONDS]) })
      return token
    },

    /** The challenge of this token, for this user's registration (or a login: null), spent: a ceremony answers once. */
    async takeChallenge (token: string, userId: number | null, trx: Knex): Promise<string | undefined> {
      const [row] = await trx('webauthn_challenges').where('token_hash', mailedTokenHash(token)).where('expires_at', '>', trx.fn.now())
        .where(qb => userId === null ? qb.whereNull('user_id') : qb.where('user_id', userId))
        .delete().returning('challenge') as Array<{ challenge: string }>
      return row?.challenge
    },

    /** Keeps the user's new passkey: undefined if its credential is registered already. */
    async add (userId: number, name: string, passkey: StoredPasskey, trx: Knex): Promise<Passkey | undefined> {
      const [row] = await trx('passkeys').insert({
        user_id: userId, name, credential_id: passkey.credentialId, public_key: passkey.publicKey, counter: passkey.counter, transports: passkey.transports
      }).onConflict('credential_id').ignore().returning(COLUMNS) as Passkey[]
      return row
    },

    /** Removes one of the user's passkeys: the passkey as it was, if it was theirs. */
    async remove (userId: number, id: number, trx: Knex): Promise<Passkey | undefined> {
      const [row] = await trx('passkeys').where({ id, user_id: userId }).delete().returning(COLUMNS) as Passkey[]
      return row
    },

    /** Removes every passkey of the user, and their registrations under way: the passkeys as they were. */
    async removeAll (userId: number, trx: Knex): Promise<Passkey[]> {
      await trx('webauthn_challenges').where({ user_id: userId }).delete()
      return await trx('passkeys').where({ user_id: userId }).delete().returning(COLUMNS) as Passkey[]
    },

    /** The user of the passkey of this credential, if any. */
    async findOwner (credentialId: string, trx: Knex): Promise<number | undefined> {
      const row = await trx('passkeys').where({ credential_id: credentialId }).first<{ user_id: number } | undefined>('user_id')
      return row?.user_id
    },

    /** The passkey of this credential, locked until `trx` ends. */
    async lockByCredential (credentialId: string, trx: Knex): Promise<FoundPasskey | undefined> {
      const row = await trx('passkeys').where({ credential_id: credentialId }).forUpdate()
        .first<{ id: number, user_id: number, public_key: Buffer, counter: string, transports: string[] } | undefined>('id', 'user_id', 'public_key', 'counter', 'transports')
      return row && { id: row.id, userId: row.user_id, credentialId, publicKey: row.public_key, counter: Number(row.counter), transports: row.transports }
    },

    /** The passkey signed a login now, with this counter. */
    async used (id: number, counter: number, trx: Knex): Promise<void> {
      await trx('passkeys').where({ id }).update({ counter, last_used_at: trx.fn.now() })
    }
  }
}

export const passkeysRepository = oncePerDatabase(createPasskeysRepository)
