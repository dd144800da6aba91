import type { Knex } from 'knex'
import { oncePerDatabase } from '../db/once-per-database.js'
import { prepare, type Database } from '../db/prepared-query.js'
import { countAttempt, type Attempt, type AttemptCount } from './attempt-counts.js'
import { emailKey } from './email.js'
import { HAS_FACTOR } from './caller-queries.js'

/**
 * What a password check needs of a user: who they are, their password's hash, whether their
 * address is verified, and whether a login waits for their second factor.
 */
export interface Credentials { id: number, password: string, verified: boolean, mfa: boolean }

/** How long a session's reauthentication stands for what asks for the password again. */
export const REAUTHENTICATION_SECONDS = 300
/** A login's count under one key, and the user of the e-mail address, if any, on every row. */
type CountedCredentials = AttemptCount & { [column in keyof Credentials]: Credentials[column] | null }

/**
 * The reads of a password check (login, and the password asked again before a sensitive change):
 * queries of their own, so that neither needs the users' data access. Password hashes leave the
 * database through these only.
 */
function createCredentialQueries (database: Database) {
  const { knex } = database
  const notDeleted = (trx: Knex) => trx('users as u').whereNull('u.deleted_at')
  // By the address's key (lib/auth/email.ts).
  const credentialsOf = (key: string) => notDeleted(knex).select('u.id', 'u.password', knex.raw('u.email_verified_at is not null as verified'),
    knex.raw(HAS_FACTOR)).where('u.email_key', key)

  const credentials = prepare<[key: string], Credentials>(database, 'users.credentials', key => credentialsOf(key).first())
  const countedCredentials = prepare<[windowSeconds: number, ipKey: string, emailCounter: string | null, key: string], CountedCredentials>(
    database, 'users.counted-credentials', (windowSeconds, ipKey, emailCounter, key) => knex
      .with('counts', countAttempt(knex, windowSeconds, ipKey, emailCounter))
      .select('c.key', 'c.hits', 'c.retry_after', 'user.id', 'user.password', 'user.verified', 'user.mfa')
      .from('counts as c')
      .leftJoin(credentialsOf(key).as('user'), knex.raw('true')))

  return {
    /** The user with this address, if there is one. */
    async find (email: string, trx: Knex = knex): Promise<Credentials | undefined> {
      return (await credentials([emailKey(email)], trx)).rows[0]
    },

    /**
     * Login's lookup, in the statement that counts the attempt: one round trip to PostgreSQL,
     * not two (docs/performance.md).
     */
    async findCounting (email: string, attempt: Attempt): Promise<{ counts: AttemptCount[], user: Credentials | undefined }> {
      const { rows } = await countedCredentials([attempt.windowSeconds, attempt.ipKey, attempt.emailCounter, emailKey(email)])
      const [first] = rows
      return { counts: rows, user: first?.id == null ? undefined : { id: first.id, password: first.password!, verified: first.verified!, mfa: first.mfa! } }
    },

    /** The address of the user, unless deleted. */
    async emailOf (id: number, db: Knex = knex): Promise<string | undefined> {
      const row: { email: string } | undefined = await notDeleted(db).where('u.id', id).first('u.email')
      return row?.email
    },

    /**
     * The user's password hash, their row locked until `trx` ends as every change of a user
     * locks it (FOR NO KEY UPDATE): the one a waited-for change committed, undefined for a user
     * deleted meanwhile.
     */
    async lockedPassword (id: number, trx: Knex): Promise<string | undefined> {
      return (await this.lockedCredentials(id, trx))?.password
    },

    /**
     * The user's password hash, if their session `sessionId` is live and was reauthenticated
     * (POST /api/profile/reauthenticate) within the last REAUTHENTICATION_SECONDS, as of this
     * statement (in a transaction that waited on a lock, not as of its start). The session's
     * row is shared until `db` ends: its end, an UPDATE, waits for it.
     */
    async reauthenticatedPassword (userId: number, sessionId: number, db: Knex = knex): Promise<string | undefined> {
      const row: { password: string } | undefined = await notDeleted(db).join('sessions as s', 's.user_id', 'u.id')
        .where({ 'u.id': userId, 's.id': sessionId }).whereNull('s.ended_at').whereRaw('s.expires_at > statement_timestamp()')
        .whereRaw('s.reauthenticated_at > statement_timestamp() - make_interval(secs => ?)', [REAUTHENTICATION_SECONDS])
        .forShare('s').first('u.password')
      return row?.password
    },

    /** As `lockedPassword`, with whether the user's address is verified. */
    async lockedCredentials (id: number, trx: Knex): Promise<{ password: string, verified: boolean } | undefined> {
      return await notDeleted(trx).where('u.id', id).forNoKeyUpdate().first('u.password', trx.raw('u.email_verified_at is not null as verified'))
    }
  }
}

export const credentialQueries = oncePerDatabase(createCredentialQueries)
