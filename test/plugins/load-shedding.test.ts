import t from 'tap'
import { build } from '../helper.js'

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))
const stall = (ms: number) => { const until = Date.now() + ms; while (Date.now() < until) { /* busy */ } }

t.test('stalls shorter than MAX_EVENT_LOOP_DELAY shed nothing', async t => {
  const plain = await build(t)
  const app = await build(t, { db: plain.config.db, timeouts: { ...plain.config.timeouts, maxEventLoopDelay: 1_000 } })
  const codes: number[] = []
  // Stalls of 450 ms one after the other, each followed by a request: longer than the lag
  // sampler's period (250 ms), so that some periods see no tick of its timer, but well under
  // the limit.
  for (let i = 0; i < 8; i++) {
    stall(450)
    await sleep(0)
    codes.push((await app.inject({ url: '/students?limit=1' })).statusCode)
  }
  t.same(codes.filter(code => code !== 200), [], 'every request answered')
})
