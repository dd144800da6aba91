// A forgotten password, as a front end resets it with the typed client (README, "Password
// reset"): the user asks for the mail, then follows its link, whose page sends the link's token
// with the new password. Two steps, as a person takes them, a mail apart:
//
//   npx tsx examples/client/reset-password.ts <service URL> forgot <e-mail address>
//   npx tsx examples/client/reset-password.ts <service URL> reset <token> <new password> <e-mail address>
//
// The second sets the password, and logs in with it. The service needs SMTP_URL (README,
// "Configuration"). A real front end takes the password from a form, not from its arguments.
import { check, serviceAt } from './client.js'

const [baseUrl = '', step, ...args] = process.argv.slice(2)
const api = serviceAt(baseUrl)

if (step === 'forgot') {
  const [email = ''] = args
  // The same answer whether or not a user has the address: it tells nobody who has an account.
  const asked = await api.POST('/api/password/forgot', { body: { email } })
  check(asked.response.status === 202, 'ask for a reset mail', asked)
} else if (step === 'reset') {
  const [token = '', password = '', email = ''] = args
  const reset = await api.POST('/api/password/reset', { body: { token, password, c_password: password } })
  check(reset.data?.success === true, 'set the new password with the mailed token', reset)
  // Every session and API key of the account ended: the new password starts the next one.
  const login = await api.POST('/api/login', { body: { email, password } })
  check(login.data !== undefined && 'data' in login.data, 'log in with it', login)
} else {
  console.error('usage: reset-password.ts <service URL> forgot <e-mail> | reset <token> <new password> <e-mail>')
  process.exit(2)
}
