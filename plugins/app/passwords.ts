import fp from 'fastify-plugin'
import { Passwords } from '../../lib/auth/passwords.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Hashes and verifies passwords (argon2id) on threads of their own. */
    passwords: Passwords
  }
}

/**
 * Password hashing: its threads start at registration, with the stand-in hash that logins for
 * unknown addresses are checked against, and end when the app closes.
 */
export default fp(async (fastify) => {
  const passwords = new Passwords(fastify.config.auth.passwordHashing)
  fastify.decorate('passwords', passwords)
  fastify.addHook('onClose', () => passwords.close())
  await passwords.prepare()
}, { name: 'passwords', dependencies: ['config'] })
