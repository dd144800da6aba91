import { readFile } from 'node:fs/promises'
import t from 'tap'
import { build } from '../helper.js'

t.test('GET / answers the service\'s name and version and links to its documentation, which all answer', async t => {
  const app = await build(t)
  const res = await app.inject({ url: '/' })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^application\/json/)
  const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8'))
  t.same(res.json(), {
    success: true,
    data: {
      name: 'Student records API',
      version,
      links: { documentation: '/documentation', openapi: '/documentation/json', health: '/health/ready' }
    }
  })
  const { documentation, openapi, health } = res.json().data.links
  t.match((await app.inject({ url: documentation })).headers['content-type'], /^text\/html/, 'the documentation page')
  t.equal((await app.inject({ url: openapi })).json().paths['/'].get.operationId, 'service.index', 'the OpenAPI document, which describes GET / too')
  t.equal((await app.inject({ url: health })).json().status, 'ok', 'the readiness probe')
  const head = await app.inject({ method: 'HEAD', url: '/' })
  t.equal(head.statusCode, 200, 'HEAD as every GET')
  t.equal(head.body, '')
})
