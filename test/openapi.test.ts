import { readFile } from 'node:fs/promises'
import t from 'tap'
import { build, routesOf } from './helper.js'

const committed = JSON.parse(await readFile(new URL('../openapi.json', import.meta.url), 'utf8'))

t.test('openapi.json is the document the service serves (npm run openapi rewrites it)', async t => {
  const app = await build(t)
  const res = await app.inject({ url: '/documentation/json' })
  t.equal(res.statusCode, 200)
  t.same(res.json(), committed)
})

t.test('every route is in the document, named, described, with its responses', async t => {
  const app = await build(t)
  // The API's routes: all but HEAD (Fastify adds one for each GET) and the documentation's own.
  const apiRoutes = routesOf(app).filter(route => route.method !== 'HEAD' && !route.url.startsWith('/documentation'))
  t.ok(apiRoutes.length > 0, 'the routes were seen')
  for (const route of apiRoutes) t.type(route.schema?.operationId, 'string', `${String(route.method)} ${route.url}: an operation id`)
  const operations = Object.entries(committed.paths as Record<string, Record<string, Record<string, any>>>)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, operation]) => ({ path, method, operation })))
  t.same(operations.map(o => o.operation.operationId).sort(), apiRoutes.map(route => route.schema!.operationId).sort(), 'one operation per route')
  const tags = committed.tags as { name: string, description: string }[]
  t.same(new Set(tags.map(tag => tag.name)), new Set(operations.flatMap(o => o.operation.tags)), 'every tag used is declared, and every tag declared is used')
  t.equal(new Set(tags.map(tag => tag.name)).size, tags.length, 'each tag once')
  for (const tag of tags) t.ok(tag.description, `tag ${tag.name}: described`)
  t.equal(committed.openapi, '3.1.0')
  for (const { path, method, operation } of operations) {
    const label = `${method.toUpperCase()} ${path}`
    t.ok(operation.summary && operation.description, `${label}: summary and description`)
    t.ok(operation.tags?.length, `${label}: tagged`)
    const statuses = Object.keys(operation.responses)
    t.ok(statuses.some(s => s.startsWith('2')) && statuses.includes('500') && statuses.includes('503'), `${label}: success, 500 and 503`)
    for (const status of statuses.filter(s => Number(s) >= 400)) {
      t.same(operation.responses[status].content['application/json'].schema, { $ref: '#/components/schemas/ErrorBody' }, `${label} ${status}: the error body`)
    }
    const guarded = path.startsWith('/api/') && !path.startsWith('/api/v1/') && !['/api/login', '/api/login/mfa', '/api/login/passkey/options', '/api/login/passkey', '/api/register', '/api/token/refresh', '/api/password/forgot', '/api/password/reset', '/api/email/verify', '/api/email/resend'].includes(path)
    // Keys, sessions, the logout, changes of the profile and its second factors: an access token's only.
    const tokenOnly = /^\/api\/(keys|sessions|profile\/mfa|profile\/passkeys|profile\/reauthenticate)(\/|$)/.test(path) || path === '/api/logout' || (path === '/api/profile' && method === 'patch')
    t.same(operation.security, !guarded ? [] : tokenOnly ? [{ bearerAuth: [] }] : [{ bearerAuth: [] }, { apiKey: [] }], `${label}: security`)
    if (guarded && tokenOnly) t.ok(operation.responses['403'], `${label}: 403, for an API key`)
    if (guarded) t.ok(operation.responses['401'], `${label}: 401`)
    // Refused to an account that must enrol a second factor first (MFA_REQUIRED_ROLES), but what serves the enrolment.
    if (guarded && !(path === '/api/profile' && method === 'get') && path !== '/api/logout') t.ok(operation.responses['403'], `${label}: 403, for an account without its required second factor`)
  }
  t.same(committed.components.securitySchemes.bearerAuth, {
    type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'A token from POST /api/login or /api/register'
  })
  t.match(committed.components.securitySchemes.apiKey, { type: 'http', scheme: 'bearer', bearerFormat: 'sk_…' })
  t.notOk(Object.keys(committed.components.schemas).some(name => /^def-\d+$/.test(name)), 'named components only')
  t.notOk('Error' in committed.components.schemas, 'no component named Error')
})

t.test('the tags in the order a newcomer meets them: the students, then logging in, then the rest', async t => {
  const tags = (committed.tags as { name: string }[]).map(tag => tag.name)
  t.same(tags.slice(0, 3), ['students (v1)', 'students', 'auth'])
  t.ok(tags.indexOf('clients') > tags.indexOf('auth'), 'the resources behind logging in after it')
})

t.test('no optional parameter is required: only path parameters are', async t => {
  interface Parameter { in: string, name: string, required?: boolean, schema: { default?: unknown } }
  // A shared parameter (X-Request-Id) is a reference to the document's components.
  const shared = (committed.components as { parameters: Record<string, Parameter> }).parameters
  const resolved = (parameter: Parameter | { $ref: string }) => '$ref' in parameter ? shared[parameter.$ref.split('/').pop()!]! : parameter
  for (const [path, methods] of Object.entries(committed.paths as Record<string, Record<string, { parameters?: (Parameter | { $ref: string })[] }>>)) {
    for (const [method, operation] of Object.entries(methods)) {
      for (const parameter of (operation.parameters ?? []).map(resolved)) {
        const label = `${method.toUpperCase()} ${path} ${parameter.in} ${parameter.name}`
        t.equal(parameter.required === true, parameter.in === 'path', `${label}: required only in the path`)
        if ('default' in parameter.schema) t.not(parameter.required, true, `${label}: has a default, so it is optional`)
      }
    }
  }
})

t.test('the document and its page say what package.json says: the name, version and licence', async t => {
  const pkg = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8'))
  t.equal(committed.info.version, pkg.version)
  t.same(committed.info.license, { name: pkg.license, identifier: pkg.license })
  t.equal(pkg.license, 'MIT')
  t.match(await readFile(new URL('../LICENSE', import.meta.url), 'utf8'), /^MIT License\n/)
  const app = await build(t)
  const page = await app.inject({ url: '/documentation/' })
  t.equal(/<title>([^<]*)<\/title>/.exec(page.body)?.[1], committed.info.title, 'the page is titled as the API, not "Swagger UI"')
})

t.test('the documentation page and the YAML work offline', async t => {
  const app = await build(t)
  const yaml = await app.inject({ url: '/documentation/yaml' })
  t.equal(yaml.statusCode, 200)
  t.match(yaml.body, /^openapi: 3\.1\.0/m)

  const page = await app.inject({ url: '/documentation/' })
  t.equal(page.statusCode, 200)
  t.match(page.headers['content-type'], /text\/html/)
  const assets = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)].map(match => match[1]!)
  t.ok(assets.length > 0)
  for (const asset of assets) {
    t.notMatch(asset, /^(https?:)?\/\//, `${asset} is served locally`)
    const res = await app.inject({ url: new URL(asset, 'http://localhost/documentation/').pathname })
    t.equal(res.statusCode, 200, asset)
    t.notMatch(res.body, /fonts\.googleapis|cdn\.jsdelivr|unpkg\.com/, `${asset} loads nothing remote`)
  }
})
