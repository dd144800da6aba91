import { existsSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { chromium } from 'playwright-core'
import { build } from '../../helper.js'

/** Debian's Chromium (apt-get install chromium); .ci/run installs it. */
const CHROMIUM = '/usr/bin/chromium'
/** A host name that is not localhost, as a container or another machine is reached by. */
const HOST = 'docs.test'

// CI installs it: there, a missing browser fails the test (it cannot start) rather than skip it.
const skip = !existsSync(CHROMIUM) && !process.env.CI && `${CHROMIUM} is missing (apt-get install chromium): the documentation page is not tried in a browser`

t.test('the documentation page renders in a browser reached over plain HTTP by a host name, its tags in the order users meet them', { skip }, async t => {
  const app = await build(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as AddressInfo
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    // As root, Chromium runs only without its sandbox; the host name resolves to the test's server.
    args: ['--no-sandbox', `--host-resolver-rules=MAP ${HOST} 127.0.0.1`]
  })
  t.teardown(() => browser.close())
  const page = await browser.newPage()
  const failed: string[] = []
  page.on('requestfailed', request => failed.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`))
  page.on('response', response => { if (response.status() >= 400) failed.push(`${response.url()}: ${response.status()}`) })

  const documentation = await page.goto(`http://${HOST}:${port}/documentation`)
  t.equal(documentation?.status(), 200)
  const rendered = await page.getByText('Liveness', { exact: true }).waitFor({ timeout: 30_000 }).then(() => true, () => false)
  t.ok(rendered, 'Swagger UI rendered the operations (the summary of GET /health/live is shown)')
  t.same(failed, [], 'no request of the page failed')

  const document = (await app.inject({ url: '/documentation/json' })).json() as { tags: { name: string }[] }
  const shown = rendered ? await page.locator('.opblock-tag-section h3[data-tag]').evaluateAll(tags => tags.map(tag => tag.getAttribute('data-tag'))) : []
  t.same(shown, document.tags.map(tag => tag.name), 'the page shows the tags in the document\'s order')
  t.same(shown.slice(0, 3), ['students (v1)', 'students', 'auth'], 'the students first, then logging in')
})
