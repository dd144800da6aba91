import { spawnSync } from 'node:child_process'
import t from 'tap'
import { databaseEnv, sleep, startBalancer, startServer } from './process.js'

const haproxy = spawnSync('haproxy', ['-v']).status === 0

t.test('through HAProxy to two instances, a caller sending as fast as it can is held to its policy: never a tenth over, four fifths of it at least',
  { skip: haproxy ? false : 'haproxy is not installed (.ci/run installs it)' }, async t => {
    // 40 units a second: a burst of 40, then one every 25 ms. Low enough that twenty clients
    // through HAProxy exceed it by far on a two-core machine busy with the rest of the suite
    // (at 100/1s they asked for barely a quarter more there), high enough that one lease (an
    // eighth) is a few units.
    const env = { ...await databaseEnv(t), RATE_LIMIT: '40/1s' }
    const instances = await Promise.all([startServer(env), startServer(env)])
    t.teardown(() => { for (const instance of instances) instance.kill() })
    const url = await startBalancer(t, instances.map(instance => instance.url) as [string, string])
    t.ok(url, 'HAProxy sends to the instances')

    const password = 'correct horse battery'
    const registered = await fetch(`${url}/api/register`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Busy', email: 'busy@example.com', password, c_password: password })
    })
    t.equal(registered.status, 201)
    const headers = { authorization: `Bearer ${(await registered.json() as { data: string }).data}` }

    // Twenty clients, for 5 s: each answer 200 or 429, nothing else.
    const counts = new Map<number, number>()
    let running = true
    const started = Date.now()
    let lastServed = started
    const client = async () => {
      // eslint-disable-next-line no-unmodified-loop-condition -- set to false elsewhere while the loop awaits
      while (running) {
        const res = await fetch(`${url}/api/profile`, { headers })
        await res.arrayBuffer()
        if (res.status === 200) lastServed = Date.now()
        counts.set(res.status, (counts.get(res.status) ?? 0) + 1)
      }
    }
    const load = Promise.all(Array.from({ length: 20 }, client))
    await sleep(5_000)
    running = false
    await load
    // The policy's window: from the first request sent to the last one served. The requests
    // still in flight when the load stops (twenty, slow on a busy machine) are refused or
    // served within it; counting their time too would allow units no request could spend.
    const seconds = (lastServed - started) / 1_000
    const served = counts.get(200) ?? 0
    const policy = 40 + 40 * seconds
    t.same([...counts.keys()].sort(), [200, 429], 'answered 200 or 429')
    // Over the policy by a quarter at least, so that the count served below is the policy's: on a
    // machine busy with the rest of the suite, twenty clients ask for less than on a quiet one.
    t.ok(counts.get(429)! > served / 4, `refused a quarter of what was served at least: ${counts.get(429)} refused`)
    t.ok(served <= policy * 1.1, `${served} served in ${seconds.toFixed(1)} s: at most a tenth over the ${policy.toFixed(0)} the policy allows`)
    // Under: units the instances hold in leases at the end, and, on a machine busy with the rest
    // of the suite, more (89 % of the policy served in two CI runs, 96–98 % on a quiet machine:
    // docs/performance.md, "Rate limits: the authenticated GET with a policy").
    t.ok(served >= policy * 0.8, `${served} served in ${seconds.toFixed(1)} s: at least four fifths of the ${policy.toFixed(0)} the policy allows`)
    const usage = await (await fetch(`${url}/api/usage`, { headers })).json() as { data?: { rate: { remaining: number } } }
    t.ok(usage.data === undefined || usage.data.rate.remaining < 40, 'the bucket near empty, or the usage read refused')
  })
