import t from 'tap'
import { build } from '../helper.js'
import { bearer, insertClient, PASSWORD, rolesOf, userWithRoles } from '../routes/api/accounts.js'
import { ada } from '../routes/students/fixtures.js'
import { fuzzWrites } from './writes.js'
import { startMailServer } from '../mail-server.js'

t.test('every write, fuzzed from its own schema: 2xx or a documented 4xx, never 5xx, and no 4xx changes a row', async t => {
  // A real SMTP server: the password reset's mails are sent.
  const mail = await startMailServer(t)
  const app = await build(t, config => {
    Object.assign(config.auth.rateLimit, { perIp: 1_000_000, perEmail: 1_000_000, notFoundPerIp: 1_000_000 })
    config.mail = { smtpUrl: mail.url, from: 'fuzz@example.com', publicUrl: 'http://localhost' }
  })
  const admin = await userWithRoles(app, ['Admin'])
  await fuzzWrites(t, app, {
    token: admin.token,
    ids: {
      students: (await app.inject({ method: 'POST', url: '/students', payload: ada })).json().id,
      clients: await insertClient(app),
      roles: (await rolesOf(app).findByNames(['User']))[0]!.id,
      users: (await userWithRoles(app, ['User'])).id,
      keys: (await app.inject({ method: 'POST', url: '/api/keys', headers: bearer(admin.token), payload: { name: 'fuzzed', permissions: [], current_password: PASSWORD } })).json().data.id
    }
  })
})
