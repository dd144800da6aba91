import { createHash } from 'node:crypto'
import type { Knex } from 'knex'
import type { CallerCache } from '../../../../../lib/auth/caller-cache.js'
import type { Database } from '../../../../../lib/db/prepared-query.js'
import { oncePerDatabase } from '../../../../../lib/db/once-per-database.js'
import { mailedTokenHash, newMailedToken } from '../../../../../lib/auth/mailed-tokens.js'
import { acceptedStep, newRecoveryCodes, recoveryCodeHash } from '../../../../../lib/auth/totp.js'
import type { MfaStatus } from './schema.js'

/** How long a login waits for its second factor. */
export const MFA_CHALLENGE_TTL_SECONDS = 300

/** Wrong codes a login's challenge takes before it is spent: log in again. */
export const MFA_CHALLENGE_FAILURES = 5

/**
 * Wrong codes in a row, across a user's logins, after which codes are refused for
 * MFA_LOCK_SECONDS: whoever has the password tries 10 codes a quarter of an hour, not 50 a minute.
 */
export const MFA_LOCK_FAILURES = 10
export const MFA_LOCK_SECONDS = 900

/** Wrong codes an enrolment takes before it ends: start again, with the password. */
export const ENROLMENT_FAILURES = 5

/** A login waiting for its second factor: whose, and the SHA-256 of the password hash it matched. */
export interface Challenge { user_id: number, password_digest: Buffer }

/**
 * What a challenge keeps of the password hash its login matched: its SHA-256, enough to tell
 * whether the password changed since, and no copy of the hash in another table.
 */
const passwordDigest = (passwordHash: string) => createHash('sha256').update(passwordHash).digest()

/** What checking a code against a factor came to. */
export type CodeCheck = 'accepted' | 'wrong' | 'none'

/** What checking a login's code came to: `locked` for the seconds left of a lock. */
export type LoginCodeCheck = { check: CodeCheck } | { check: 'locked', retryAfter: number }

/**
 * A user's second factors (the TOTP factor and its recovery codes) and the logins that wait
 * for one (migration 20261213000000_totp_factors.ts). Every write takes the caller's
 * transaction: the routes audit it in the same one. A factor confirmed or ended changes what
 * the user's tokens serve (MFA_REQUIRED_ROLES): this instance's cached callers of the user go at
 * commit, the others' with the database's notification.
 */
function createMfaRepository (database: Database, cache: CallerCache) {
  const { knex } = database
  const live = (db: Knex) => db('mfa_challenges').where('expires_at', '>', db.fn.now())

  return {
    /** Whether the user has a factor, one waiting for its first code, and recovery codes left. */
    async status (userId: number): Promise<MfaStatus> {
      const { rows: [row] } = await knex.raw(`
        select f.confirmed_at, f.user_id is not null and f.confirmed_at is null as pending,
          (select count(*)::int from recovery_codes r where r.user_id = ? and r.used_at is null) as left
        from (select 1) as one left join totp_factors f on f.user_id = ?`, [userId, userId]) as { rows: Array<{ confirmed_at: string | null, pending: boolean, left: number }> }
      return {
        totp: { enabled: row!.confirmed_at !== null, pending: row!.pending, confirmed_at: row!.confirmed_at },
        recovery_codes_left: row!.left
      }
    },

    /**
     * Keeps a new secret for the user's factor, waiting for its first code (replacing one that
     * waited): false, and nothing written, if the user has a confirmed factor.
     */
    async startTotp (userId: number, secret: string, trx: Knex): Promise<boolean> {
      const rows = await trx.raw(`
        insert into totp_factors as f (user_id, secret) values (?, ?)
        on conflict (user_id) do update set secret = excluded.secret, created_at = now(), last_step = null, failures = 0, locked_until = null
        where f.confirmed_at is null
        returning user_id`, [userId, secret]) as { rows: unknown[] }
      return rows.rows.length > 0
    },

    /**
     * Confirms the factor waiting for its first code, if `code` is its code of now. A wrong one
     * is counted; the ENROLMENT_FAILURES-th ends the enrolment.
     */
    async confirmTotp (userId: number, code: string, trx: Knex): Promise<CodeCheck> {
      const factor = await trx('totp_factors').where({ user_id: userId }).whereNull('confirmed_at').forUpdate().first<{ secret: string, failures: number } | undefined>('secret', 'failures')
      if (factor === undefined) return 'none'
      const step = acceptedStep(factor.secret, code, null)
      if (step === undefined) {
        const pending = trx('totp_factors').where({ user_id: userId })
        await (factor.failures + 1 >= ENROLMENT_FAILURES ? pending.delete() : pending.increment('failures', 1))
        return 'wrong'
      }
      await trx('totp_factors').where({ user_id: userId }).update({ confirmed_at: trx.fn.now(), last_step: step, failures: 0 })
      cache.afterCommit(trx, callers => callers.forgetUser(userId))
      return 'accepted'
    },

    /** Ends the user's factor and its recovery codes, and the logins waiting for it: false if they had none. */
    async disableTotp (userId: number, trx: Knex): Promise<boolean> {
      const removed = await trx('totp_factors').where({ user_id: userId }).delete()
      await trx('recovery_codes').where({ user_id: userId }).delete()
      await trx('mfa_challenges').where({ user_id: userId }).delete()
      cache.afterCommit(trx, callers => callers.forgetUser(userId))
      return removed > 0
    },

    /** Whether the user has a confirmed factor, locked until `trx` ends. */
    async hasTotp (userId: number, trx: Knex): Promise<boolean> {
      return await trx('totp_factors').where({ user_id: userId }).whereNotNull('confirmed_at').forNoKeyUpdate().first('user_id') !== undefined
    },

    /** New recovery codes for the user, the earlier ones void: the codes, shown once. */
    async replaceRecoveryCodes (userId: number, trx: Knex): Promise<string[]> {
      const codes = newRecoveryCodes()
      await trx('recovery_codes').where({ user_id: userId }).delete()
      await trx('recovery_codes').insert(codes.map(({ hash }) => ({ user_id: userId, code_hash: hash })))
      return codes.map(({ code }) => code)
    },

    /**
     * Accepts `code` as the user's factor's, once: its time step is kept, and no code of that
     * step or before works again. A wrong one is counted; the MFA_LOCK_FAILURES-th in a row locks
     * the factor's codes for MFA_LOCK_SECONDS.
     */
    async checkTotp (userId: number, code: string, trx: Knex): Promise<LoginCodeCheck> {
      const factor = await trx('totp_factors').where({ user_id: userId }).whereNotNull('confirmed_at').forUpdate()
        .first<{ secret: string, last_step: string, locked: number | null } | undefined>('secret', 'last_step', trx.raw('ceil(extract(epoch from locked_until - now()))::int as locked'))
      // None for a reauthentication of an account without an app; for a login's second step, a
      // factor turned off ends the logins waiting for it, in its transaction.
      if (factor === undefined) return { check: 'none' }
      if (factor.locked !== null && factor.locked > 0) return { check: 'locked', retryAfter: factor.locked }
      // Set by the confirmation: a confirmed factor has taken a code.
      const step = acceptedStep(factor.secret, code, Number(factor.last_step))
      if (step === undefined) {
        await trx.raw(`
          update totp_factors set
            failures = case when failures + 1 >= ? then 0 else failures + 1 end,
            locked_until = case when failures + 1 >= ? then now() + make_interval(secs => ?) else locked_until end
          where user_id = ?`, [MFA_LOCK_FAILURES, MFA_LOCK_FAILURES, MFA_LOCK_SECONDS, userId])
        return { check: 'wrong' }
      }
      await trx('totp_factors').where({ user_id: userId }).update({ last_step: step, failures: 0 })
      return { check: 'accepted' }
    },

    /** Spends one of the user's recovery codes (49 random bits: a lock of the app's codes does not hold them back). */
    async useRecoveryCode (userId: number, code: string, trx: Knex): Promise<LoginCodeCheck> {
      const used = await trx('recovery_codes').where({ user_id: userId, code_hash: recoveryCodeHash(code) }).whereNull('used_at').update({ used_at: trx.fn.now() })
      return { check: used > 0 ? 'accepted' : 'wrong' }
    },

    /**
     * A login of the user waiting for its second factor: the opaque token its answer carries
     * (kept as its SHA-256). The user's challenges expired are swept on the way.
     */
    async issueChallenge (userId: number, passwordHash: string, trx: Knex): Promise<string> {
      const { token, hash } = newMailedToken()
      await trx('mfa_challenges').where({ user_id: userId }).where('expires_at', '<=', trx.fn.now()).delete()
      await trx('mfa_challenges').insert({
        token_hash: hash, user_id: userId, password_digest: passwordDigest(passwordHash), expires_at: trx.raw('now() + make_interval(secs => ?)', [MFA_CHALLENGE_TTL_SECONDS])
      })
      return token
    },

    /** The challenge of this token, if it still works. */
    async findChallenge (token: string, trx: Knex): Promise<Challenge | undefined> {
      return await live(trx).where('token_hash', mailedTokenHash(token)).first<Challenge | undefined>('user_id', 'password_digest')
    },

    /** The challenge of this token, if it still works, locked until `trx` ends. */
    async lockChallenge (token: string, trx: Knex): Promise<Challenge | undefined> {
      return await live(trx).where('token_hash', mailedTokenHash(token)).forUpdate().first<Challenge | undefined>('user_id', 'password_digest')
    },

    /** Whether the user's password is still the one the challenge's login matched (undefined: the user is gone). */
    passwordUnchangedSince (challenge: Challenge, passwordHash: string | undefined): boolean {
      return passwordHash !== undefined && passwordDigest(passwordHash).equals(challenge.password_digest)
    },

    /** The challenge completed: it works once. */
    async spendChallenge (token: string, trx: Knex): Promise<void> {
      await trx('mfa_challenges').where('token_hash', mailedTokenHash(token)).delete()
    },

    /** A wrong code counted against the challenge: the last it takes spends it. */
    async failChallenge (token: string, trx: Knex): Promise<void> {
      const hash = mailedTokenHash(token)
      const [row] = await trx('mfa_challenges').where('token_hash', hash).increment('failures', 1).returning('failures') as Array<{ failures: number }>
      if (row !== undefined && row.failures >= MFA_CHALLENGE_FAILURES) await trx('mfa_challenges').where('token_hash', hash).delete()
    }
  }
}

export const mfaRepository = oncePerDatabase(createMfaRepository)
