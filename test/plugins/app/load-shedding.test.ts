import type { AddressInfo } from 'node:net'
import Fastify from 'fastify'
import t from 'tap'
import app, { serverOptions } from '../../../app.js'
import { build, createDatabase, testConfig, within } from '../../helper.js'

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))
const stall = (ms: number) => { const until = Date.now() + ms; while (Date.now() < until) { /* busy */ } }

t.test('stalls shorter than MAX_EVENT_LOOP_DELAY shed nothing', async t => {
  const app = await build(t, config => { config.timeouts.maxEventLoopDelay = 2_000 })
  const answer = async () => (await app.inject({ url: '/students?limit=1' })).statusCode
  // Building the app can itself lag the loop on a busy machine: start from a calm sample.
  t.ok(await within(10_000, async () => await answer() === 200), 'answers once calm')
  const codes: number[] = []
  // Stalls of 900 ms one after the other, each followed by a request: longer than the lag
  // sampler's period (500 ms), so that some periods see no tick of its timer, but well under
  // the limit.
  for (let i = 0; i < 6; i++) {
    stall(900)
    await sleep(0)
    codes.push(await answer())
  }
  t.same(codes.filter(code => code !== 200), [], 'every request answered')
})

t.test('the lag of start-up sheds nothing: the first request once it listens is answered', async t => {
  // A sampling period of 100 ms: a request soon after start-up comes before the sampler has
  // measured again past the start-up's lag.
  const config = testConfig(await createDatabase(t), config => { config.timeouts.maxEventLoopDelay = 400 })
  const fastify = Fastify(serverOptions(config))
  t.teardown(() => fastify.close())
  await fastify.register(app, { config })
  // The end of a start-up that holds the loop far past MAX_EVENT_LOOP_DELAY, as a busy
  // machine's does.
  fastify.addHook('onReady', async () => {
    for (let i = 0; i < 3; i++) {
      stall(1_500)
      await new Promise(resolve => setImmediate(resolve))
    }
  })
  await fastify.listen({ port: 0, host: '127.0.0.1' })
  const { port } = fastify.server.address() as AddressInfo
  t.equal((await fetch(`http://127.0.0.1:${port}/students?limit=1`)).status, 200)
})

t.test('a request shed is answered in the error body with Retry-After, on the documentation\'s routes as on the API\'s', async t => {
  const app = await build(t, config => { config.timeouts.maxEventLoopDelay = 100 })
  // The documentation's routes are a library's (swagger-ui), registered in a plugin of their own.
  for (const url of ['/students', '/documentation/json']) {
    let shed: Awaited<ReturnType<typeof app.inject>> | undefined
    for (let stalls = 0; stalls < 20 && shed?.statusCode !== 503; stalls++) {
      stall(600)
      await sleep(0)
      shed = await app.inject({ url })
    }
    t.equal(shed!.statusCode, 503, url)
    t.match(shed!.json(), { success: false, statusCode: 503, code: 'unavailable' }, `${url}: the error body`)
    t.ok(Number(shed!.headers['retry-after']) > 0, `${url}: Retry-After`)
  }
})
