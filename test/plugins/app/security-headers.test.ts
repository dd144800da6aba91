import t from 'tap'
import { build } from '../../helper.js'
import { bearer, PASSWORD, userWithRoles } from '../../routes/api/accounts.js'

t.test('the security headers on every answer, and nothing that names the software', async t => {
  const app = await build(t)
  for (const url of ['/students', '/students/999', '/nowhere']) {
    const res = await app.inject({ url })
    t.equal(res.headers['x-content-type-options'], 'nosniff', url)
    t.equal(res.headers['x-frame-options'], 'DENY', url)
    t.match(res.headers['strict-transport-security'], /max-age=\d+/, url)
    t.equal(res.headers['content-security-policy'], "default-src 'none'; frame-ancestors 'none'", url)
    t.equal(res.headers['referrer-policy'], 'no-referrer', url)
    t.notOk(res.headers['x-powered-by'], url)
    t.notOk(res.headers.server, url)
  }
})

t.test('the authenticated interface\'s answers are kept by no cache; the student interfaces\' may be', async t => {
  const app = await build(t)
  const user = await userWithRoles(app, [])
  const answers = {
    'a login\'s tokens': await app.inject({ method: 'POST', url: '/api/login', payload: { email: user.email, password: PASSWORD } }),
    'a refused login': await app.inject({ method: 'POST', url: '/api/login', payload: { email: user.email, password: 'not it' } }),
    'an enrolment\'s secret': await app.inject({ method: 'POST', url: '/api/profile/mfa/totp', headers: bearer(user.token), payload: { current_password: PASSWORD } }),
    'the profile': await app.inject({ url: '/api/profile', headers: bearer(user.token) }),
    'the profile, its path percent-encoded': await app.inject({ url: '/%61pi/profile', headers: bearer(user.token) })
  }
  t.same(Object.values(answers).map(res => res.statusCode), [200, 401, 200, 200, 200])
  for (const [what, res] of Object.entries(answers)) {
    t.equal(res.headers['cache-control'], 'no-store', what)
  }
  for (const url of ['/students', '/api/v1/students']) t.notOk((await app.inject({ url })).headers['cache-control'], url)
})

t.test('the documentation page\'s scripts are all local files, which its policy lets run', async t => {
  const app = await build(t)
  const page = await app.inject({ url: '/documentation/' })
  t.equal(page.statusCode, 200)
  const policy = String(page.headers['content-security-policy'])
  t.match(policy, /script-src 'self'/)
  t.match(policy, /default-src 'self'.*object-src 'none'.*script-src-attr 'none'/, 'strict still')
  // Over plain HTTP by a host name, it sent the browser for the scripts over HTTPS: a blank page.
  t.notMatch(policy, /upgrade-insecure-requests/, 'no request upgraded to HTTPS')
  const scripts = page.body.match(/<script[^>]*>/g) ?? []
  t.ok(scripts.length > 0)
  t.same(scripts.filter(tag => !/ src="\.\/[^"]+"/.test(tag)), [], 'no inline script, nothing from elsewhere')
})
