import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { confirmedPassword } from '../../../lib/auth/passwords.js'
import { authSchemas, authTag } from './schema.js'

/**
 * Bodies of these routes are small even with every field at its longest and escaped
 * (about 5 KiB); the limit leaves anonymous callers no room for more.
 */
const BODY_LIMIT = 8 * 1024

/** `/api/login` and `/api/register`: the only routes of /api open to callers without a token. */
const publicRoutes: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: authTag })
  const { usersRepository, rolesRepository } = fastify

  // Login counts its attempt in the statement that looks the user up (register, in a hook,
  // before validation): a malformed body, answered 400 without a hash, is not counted.
  fastify.post('/login', { schema: authSchemas.login, bodyLimit: BODY_LIMIT }, async (request, reply) => {
    const { email, password } = request.body
    const attempt = fastify.attempt('login', request, email)
    const { counts, user } = await usersRepository.findCredentialsCounting(email, attempt)
    attempt.check(reply, counts)
    // Hashes wait their turn, one per core; by then the request may have been answered
    // (HANDLER_TIMEOUT) or dropped. Hashing for nobody would make every later login wait
    // longer still under a flood of them.
    const matches = await fastify.passwords.verify(user?.password, password, () => reply.sent || request.socket.destroyed)
    if (matches === undefined) return // nothing to answer, nor anyone to answer it to
    if (!matches) {
      reply.header('www-authenticate', 'Bearer realm="api"')
      throw fastify.httpErrors.unauthorized('These credentials do not match our records')
    }
    return { success: true as const, data: fastify.issueToken(user!) }
  })

  fastify.post('/register', { schema: authSchemas.register, bodyLimit: BODY_LIMIT, preValidation: fastify.throttle('register') }, async (request, reply) => {
    const { name, email, password, c_password: confirmation } = request.body
    const passwordHash = await fastify.passwords.hash(confirmedPassword(password, confirmation))
    return request.createOnce(reply, async db => {
      const user = await db.transaction(async trx => {
        const roles = await rolesRepository.findByNames(fastify.config.auth.registerRoles, trx)
        return usersRepository.create({ name, email, passwordHash, roleIds: roles.map(role => role.id) }, trx)
      })
      return { body: { success: true as const, data: fastify.issueToken(user), message: 'Registered' }, location: `/api/users/${user.id}` }
    })
  })
}

export default publicRoutes
