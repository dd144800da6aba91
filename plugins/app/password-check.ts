import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Knex } from 'knex'
import { CodedError } from '../../lib/http/error-codes.js'
import { credentialQueries, REAUTHENTICATION_SECONDS } from '../../lib/auth/credential-queries.js'
import { InvalidFields } from '../../lib/http/invalid-fields.js'

declare module 'fastify' {
  interface FastifyRequest {
    /**
     * The audit entry of a failed login (a wrong password at login, or a wrong
     * `current_password`): the address as typed and the user it names, if any. Under the write
     * guard, so that a request answered 503 wrote nothing.
     */
    auditFailedLogin: (email: string, userId: number | null) => Promise<void>
    /**
     * Checks the caller's `current_password` as a login checks a password, and counts it with
     * logins (429 past the limits): the proof, for `passwordUnchanged`; a wrong one is
     * audited as a failed login and answered 401. Undefined when nobody waits for the answer
     * any more (a client gone, or answered 503, before its hash's turn).
     * Without a password, the caller's session stands for it if it was reauthenticated in the
     * last 5 minutes (read in `db`); if not, 400 `invalid_body` on `current_password`, whose
     * message starts with `why` ("is needed to …").
     */
    checkCurrentPassword: (reply: FastifyReply, password: string | undefined, why: string, db?: Knex) => Promise<PasswordProof | undefined>
    /**
     * In the write's transaction, before the write: locks the caller's row (FOR NO KEY UPDATE,
     * the lock of every change of a user, taken before the user's sessions and keys) and answers
     * 401 unless their password is still the one `checkCurrentPassword` matched; for a
     * session's word, 400 as above unless the session is still live and reauthenticated.
     */
    passwordUnchanged: (reply: FastifyReply, trx: Knex, proof: PasswordProof) => Promise<void>
  }
}

/** What `checkCurrentPassword` found: the user's password hash of then, and whose word stood for it. */
export interface PasswordProof {
  hash: string
  /** The reauthenticated session whose word stood for the password; undefined: the password was sent. */
  sessionId?: number
  why: string
}

/**
 * The caller's password, asked again before what an access token alone must not do (a new
 * e-mail address or password, a new API key, a factor changed): a stolen token cannot take the
 * account over nor make a key that outlives it. Each wrong one is a failed login: counted and
 * audited as one. A session reauthenticated in the last 5 minutes (with the password, the app's
 * code or a passkey) stands for it.
 */
export default fp(async (fastify) => {
  const credentials = credentialQueries(fastify.database)
  fastify.decorateRequest('auditFailedLogin', async function (this: FastifyRequest, email: string, userId: number | null) {
    await this.guardWrite(() => this.audit(fastify.knex, { action: 'login-failed', resource: 'session', id: null, after: { email, user_id: userId } }))
  })

  /** The session's word, if it stands now (read in `db`, its row shared until `db` ends), else 400. */
  async function sessionsWord (request: FastifyRequest, why: string, db: Knex): Promise<PasswordProof> {
    const { id, sessionId } = request.user
    const hash = sessionId === undefined ? undefined : await credentials.reauthenticatedPassword(id, sessionId, db)
    if (hash === undefined) {
      throw new InvalidFields({
        current_password: [sessionId === undefined
          ? `${why}: send it (an access token of no session cannot reauthenticate)`
          : `${why}: send it, or reauthenticate this session first (POST /api/profile/reauthenticate, which stands for ${REAUTHENTICATION_SECONDS / 60} minutes)`]
      })
    }
    return { hash, sessionId, why }
  }

  fastify.decorateRequest('checkCurrentPassword', async function (this: FastifyRequest, reply: FastifyReply, password: string | undefined, why: string, db: Knex = fastify.knex) {
    if (password === undefined) return await sessionsWord(this, why, db)
    const email = await credentials.emailOf(this.user.id)
    /* c8 ignore next -- the caller deleted between the token's check and this read */
    if (email === undefined) throw new CodedError('invalid_token', 'The token is no longer valid')
    const attempt = fastify.attempt('login', this, email)
    const { counts, user } = await credentials.findCounting(email, attempt)
    attempt.check(reply, counts)
    const matches = await fastify.passwords.verify(user?.password, password, () => reply.sent || this.socket.destroyed)
    /* c8 ignore next -- a client gone, or answered 503, before its hash's turn, as login's (test/routes/api/auth.test.ts) */
    if (matches === undefined) return undefined
    if (!matches) {
      await this.auditFailedLogin(email, this.user.id)
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw new CodedError('invalid_credentials', 'The current password does not match')
    }
    return { hash: user!.password, why }
  })

  // The check above runs before the write's transaction (a hash's turn can take a while): a
  // password set meanwhile, by a recovery that ended the user's keys and sessions, must not let
  // this write land after it. Not counted nor audited as a failed login: the caller did know
  // the password of the moment (that attempt was counted), and nothing was guessed. Nor a
  // session ended meanwhile (a logout, its end by its user): its word is read again, its row
  // shared until the write commits, so that its end waits for the write or the write sees it.
  fastify.decorateRequest('passwordUnchanged', async function (this: FastifyRequest, reply: FastifyReply, trx: Knex, proof: PasswordProof) {
    if (await credentials.lockedPassword(this.user.id, trx) !== proof.hash) {
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw new CodedError('invalid_credentials', 'The password changed while this request was checked: send the current one')
    }
    if (proof.sessionId !== undefined) await sessionsWord(this, proof.why, trx)
  })
}, { name: 'password-check', dependencies: ['sensible', 'knex', 'audit', 'request-timing', 'throttle', 'passwords'] })
