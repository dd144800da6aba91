// Gives a user a new random password, prints it once, and ends every token and API key of the user: the way
// back in for an administrator who lost theirs. Runs on the service's database (DB_HOST…, or the
// embedded one of DATA_DIR, started for the command if no server runs it).
//   npm run reset-password -- admin@example.com
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import app, { serverOptions } from '../app.js'
import { ensureCommandDatabase } from '../lib/db/command-database.js'
import { loadConfig } from '../lib/process/config.js'
import { withJwtSecret } from '../lib/process/jwt-secret.js'
import { credentialQueries } from '../lib/auth/credential-queries.js'
import { apiKeysRepository } from '../routes/api/(authenticated)/keys/repository.js'
import { usersRepository } from '../routes/api/(authenticated)/users/repository.js'

const email = process.argv[2]?.trim()
if (!email) {
  console.error('Usage: npm run reset-password -- <e-mail address>')
  process.exit(2)
}
const loaded = withJwtSecret(loadConfig())
// A one-off command: no metrics listener beside the running service's.
const config = { ...loaded, logLevel: 'warn' as const, auth: { ...loaded.auth, generateAdmin: false }, metrics: null }
await ensureCommandDatabase(config)
const fastify = Fastify(serverOptions(config))
await fastify.register(app, { config })
try {
  const users = usersRepository(fastify.database, fastify.callerCache)
  const user = await credentialQueries(fastify.database).find(email)
  if (!user) {
    console.error(`No user has the e-mail address ${email}`)
    process.exitCode = 1
  } else {
    const password = randomBytes(12).toString('base64url')
    const passwordHash = await fastify.passwords.hash(password)
    await fastify.knex.transaction(async trx => {
      await users.update(user.id, { passwordHash, recovery: true }, trx)
      await users.endAllSessions(user.id, trx)
      await apiKeysRepository(fastify.database, fastify.callerCache).revokeAll(user.id, trx)
    })
    console.log(`The new password of ${email}: ${password}`)
    console.log('It is shown this once only; every token and API key of the user has ended.')
  }
} finally {
  await fastify.close()
}
// The password hashing threads would keep the process alive.
process.exit()
