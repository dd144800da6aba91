import { createHmac, generateKeyPairSync, randomUUID } from 'node:crypto'
import t from 'tap'
import { build, TEST_JWT_SECRET } from '../../helper.js'
import { AUDIENCE, ISSUER } from '../../../plugins/app/auth.js'
import { bearer, client, insertClient, rolesOf, userWithRoles } from './accounts.js'

const b64 = (value: object | string) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url')

function sign (header: object, payload: object, secret = TEST_JWT_SECRET, algorithm = 'sha256') {
  const body = `${b64(header)}.${b64(payload)}`
  return `${body}.${createHmac(algorithm, secret).update(body).digest('base64url')}`
}

/** Every protected route, with a body where it takes one. */
const routes = [
  ['GET', '/api/clients'], ['POST', '/api/clients', client], ['GET', '/api/clients/1'], ['PUT', '/api/clients/1', client],
  ['PATCH', '/api/clients/1', { city: 'Kraków' }], ['DELETE', '/api/clients/1'],
  ['GET', '/api/roles'], ['POST', '/api/roles', { name: 'R', permission: [] }], ['GET', '/api/roles/1'],
  ['PUT', '/api/roles/1', { name: 'R', permission: [] }], ['PATCH', '/api/roles/1', { name: 'R' }], ['DELETE', '/api/roles/1'],
  ['GET', '/api/users'], ['POST', '/api/users', { name: 'U', email: 'u@example.com', password: 'password1', c_password: 'password1' }],
  ['GET', '/api/users/1'], ['PUT', '/api/users/1', { name: 'U', email: 'u@example.com', roles: [] }],
  ['PATCH', '/api/users/1', { name: 'U' }], ['DELETE', '/api/users/1'],
  ['GET', '/api/logout'], ['GET', '/api/profile'], ['GET', '/api/permissions'], ['HEAD', '/api/profile']
] as const

t.test('every protected route refuses a missing, malformed, forged, expired or revoked token with 401', async t => {
  const app = await build(t)
  const { id, token } = await userWithRoles(app, ['Admin'])
  const now = Math.floor(Date.now() / 1000)
  const claims = { sub: String(id), jti: randomUUID(), gen: 0, iat: now, exp: now + 600, iss: ISSUER, aud: AUDIENCE }
  const without = (key: keyof typeof claims) => Object.fromEntries(Object.entries(claims).filter(([k]) => k !== key))
  const [header, payload] = token.split('.') as [string, string]
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const rs256Body = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64(claims)}`
  const { createSign } = await import('node:crypto')
  const rs256 = `${rs256Body}.${createSign('RSA-SHA256').update(rs256Body).sign(privateKey).toString('base64url')}`

  const expiredUser = await userWithRoles(app, ['Admin'])
  const deletedUser = await userWithRoles(app, ['Admin'])
  await app.knex('users').where({ id: deletedUser.id }).update({ deleted_at: app.knex.fn.now() })
  const loggedOut = await userWithRoles(app, ['Admin'])
  await app.inject({ url: '/api/logout', headers: bearer(loggedOut.token) })

  const refused: [string, Record<string, string>][] = [
    ['no Authorization header', {}],
    ['an empty bearer', { authorization: 'Bearer ' }],
    ['another scheme', { authorization: `Basic ${token}` }],
    ['not a JWT', { authorization: 'Bearer not-a-token' }],
    ['alg none', bearer(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`)],
    ['HS512 with the same secret', bearer(sign({ alg: 'HS512', typ: 'JWT' }, claims, TEST_JWT_SECRET, 'sha512'))],
    ['RS256', bearer(rs256)],
    ['a tampered payload', bearer(`${header}.${b64({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), sub: '999' })}.${token.split('.')[2]}`)],
    ['a stripped signature', bearer(`${header}.${payload}.`)],
    ['another secret', bearer(sign({ alg: 'HS256', typ: 'JWT' }, claims, 'another secret of at least thirty-two bytes'))],
    ['no exp', bearer(sign({ alg: 'HS256', typ: 'JWT' }, without('exp')))],
    ['no jti', bearer(sign({ alg: 'HS256', typ: 'JWT' }, without('jti')))],
    ['no iat', bearer(sign({ alg: 'HS256', typ: 'JWT' }, without('iat')))],
    ['no sub', bearer(sign({ alg: 'HS256', typ: 'JWT' }, without('sub')))],
    ['a wrong iss', bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, iss: 'someone-else' }))],
    ['a wrong aud', bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, aud: 'someone-else' }))],
    ['expired', bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub: String(expiredUser.id), iat: now - 7200, exp: now - 3600 }))],
    ['a sub that is no user id', bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub: 'admin' }))],
    // Validly signed, but not in the forms the service signs: never taken for the user, never a 500.
    ...['1.0', ' 1', '1e0', '01', '+1', `${id}.0`, ` ${id}`, `${id}e0`, `0${id}`, '2147483648', '99999999999999999999'].map(sub =>
      [`sub ${JSON.stringify(sub)}`, bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub }))] as [string, Record<string, string>]),
    ['a numeric sub', bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, sub: id }))],
    ...['not-a-uuid', '', randomUUID().toUpperCase(), `${randomUUID()} `, 'x'.repeat(5000)].map(jti =>
      [`jti ${JSON.stringify(jti.slice(0, 40))}`, bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, jti }))] as [string, Record<string, string>]),
    ['a numeric jti', bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, jti: 7 }))],
    ...[-1, 1.5, '0', null].map(gen =>
      [`gen ${JSON.stringify(gen)}`, bearer(sign({ alg: 'HS256', typ: 'JWT' }, { ...claims, gen }))] as [string, Record<string, string>]),
    ['a deleted user', bearer(deletedUser.token)],
    ['logged out', bearer(loggedOut.token)]
  ]

  t.equal((await app.inject({ url: '/api/profile', headers: bearer(sign({ alg: 'HS256', typ: 'JWT' }, claims)) })).statusCode, 200,
    'a well-formed token of our own passes, so the refusals below are for their flaw alone')

  for (const [label, headers] of refused) {
    for (const [method, url, payload] of routes) {
      const res = await app.inject({ method, url, headers, ...(payload && { payload }) })
      t.equal(res.statusCode, 401, `${label}: ${method} ${url}`)
      t.equal(res.headers['www-authenticate'], 'Bearer realm="api"')
      if (method !== 'HEAD') t.match(res.json(), { success: false, statusCode: 401, error: 'Unauthorized' })
    }
  }
})

/** A token's claims, unverified. */
const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()) as { iat: number, exp: number }

t.test('a token lives JWT_TTL: refused once it expires, though it worked before', async t => {
  const app = await build(t)
  const { token: hourly } = await userWithRoles(app, ['User'])
  t.equal(claimsOf(hourly).exp - claimsOf(hourly).iat, 3600, 'an hour by default')

  // iat and exp are whole seconds, so a token of JWT_TTL=3s is valid for 2 to 3 s: time
  // enough for the requests below on a busy machine.
  const short = await build(t, { db: app.config.db, auth: { ...app.config.auth, jwtTtlSeconds: 3 } })
  const { token } = await userWithRoles(short, ['User'])
  const { iat, exp } = claimsOf(token)
  t.equal(exp - iat, 3, 'JWT_TTL=3s')
  t.equal((await short.inject({ url: '/api/clients', headers: bearer(token) })).statusCode, 200, 'valid while it lasts')
  t.equal((await short.inject({ url: '/api/clients', headers: bearer(token) })).statusCode, 200, 'and again')
  await new Promise(resolve => setTimeout(resolve, exp * 1000 - Date.now() + 50))
  const res = await short.inject({ url: '/api/clients', headers: bearer(token) })
  t.equal(res.statusCode, 401, 'refused past its exp')
  t.equal(res.json().message, 'The token is invalid or has expired')
})

t.test('a valid token without the permission gets 403, with it 2xx', async t => {
  const app = await build(t)
  const nobody = await userWithRoles(app, [])
  const admin = await userWithRoles(app, ['Admin'])
  const clientId = await insertClient(app)
  const { id: roleId } = (await rolesOf(app).findByNames(['User']))[0]!

  const cases = [
    ['GET', '/api/clients'], ['GET', `/api/clients/${clientId}`], ['PATCH', `/api/clients/${clientId}`, { city: 'Kraków' }],
    ['GET', '/api/roles'], ['GET', `/api/roles/${roleId}`], ['GET', '/api/users'], ['GET', `/api/users/${admin.id}`],
    ['PATCH', `/api/users/${nobody.id}`, { name: 'Renamed' }], ['POST', '/api/clients', client]
  ] as const
  for (const [method, url, payload] of cases) {
    const denied = await app.inject({ method, url, headers: bearer(nobody.token), ...(payload && { payload }) })
    t.equal(denied.statusCode, 403, `without: ${method} ${url}`)
    t.match(denied.json(), { success: false, statusCode: 403, error: 'Forbidden', message: /needs the \w+-\w+ permission/ })
    const allowed = await app.inject({ method, url, headers: bearer(admin.token), ...(payload && { payload }) })
    t.ok(allowed.statusCode >= 200 && allowed.statusCode < 300, `with: ${method} ${url} → ${allowed.statusCode}`)
  }
})
