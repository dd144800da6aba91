import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import path from 'node:path'
import t from 'tap'
import pg from 'pg'
import { databaseEnv, freePort, sleep, startServer, type ServerProcess } from './process.js'

const haproxy = spawnSync('haproxy', ['-v']).status === 0

async function stopServer (server: ServerProcess): Promise<number | null> {
  const exited = once(server.process, 'exit')
  server.process.kill('SIGTERM')
  return (await exited)[0]
}

t.test('through HAProxy, an instance stopped and restarted under load: no request fails, nothing is lost',
  { skip: haproxy ? false : 'haproxy is not installed (.ci/run installs it)' }, async t => {
    const env = await databaseEnv(t)
    const ports = [await freePort(), await freePort()]
    const instances = await Promise.all(ports.map(port => startServer({ ...env, PORT: String(port) })))
    t.teardown(() => { for (const instance of instances) instance.kill() })

    const lbPort = await freePort()
    const balancer = spawn('haproxy', ['-db', '-f', path.resolve('deploy/haproxy.cfg')], {
      env: { ...process.env, LB_BIND: `127.0.0.1:${lbPort}`, INSTANCE_1: `127.0.0.1:${ports[0]}`, INSTANCE_2: `127.0.0.1:${ports[1]}` },
      stdio: ['ignore', 'ignore', 'inherit']
    })
    t.teardown(() => balancer.kill('SIGKILL'))
    const url = `http://127.0.0.1:${lbPort}`
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(100)) {
      if (await fetch(`${url}/health/ready`).then(res => res.ok, () => false)) break
    }

    // Ten clients writing students as fast as they can, each 201 remembered.
    const created: number[] = []
    const failures: string[] = []
    let running = true
    let n = 0
    const client = async () => {
      // eslint-disable-next-line no-unmodified-loop-condition -- set to false elsewhere while the loop awaits
      while (running) {
        const email = `lb-${++n}@example.com`
        // With a key, the balancer may retry a POST whose connection closed without an answer.
        const res = await fetch(`${url}/students`, {
          method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': email }, body: JSON.stringify({ name: 'Balanced', email, age: 20, dob: '2000-01-01' })
        }).catch((error: Error) => error)
        if (res instanceof Error) failures.push(`${email}: ${res.message}`)
        else if (res.status === 201) created.push(((await res.json()) as { id: number }).id)
        else failures.push(`${email}: ${res.status} ${await res.text()}`)
      }
    }
    const load = Promise.all(Array.from({ length: 10 }, client))

    await sleep(1_000)
    t.equal(await stopServer(instances[0]!), 0, 'the first instance stopped cleanly under load')
    const during = created.length
    await sleep(500)
    t.ok(created.length > during, 'the other instance served meanwhile')
    instances[0] = await startServer({ ...env, PORT: String(ports[0]) })
    await sleep(2_000) // the balancer sees it ready again and sends it requests
    running = false
    await load

    t.same(failures, [], 'no request failed')
    t.ok(created.length > 100, `${created.length} students created`)
    const db = new pg.Client({ host: env.DB_HOST, port: Number(env.DB_PORT), database: env.DB_NAME, user: env.DB_USER, password: env.DB_PASSWORD })
    await db.connect()
    const { rows } = await db.query<{ id: number }>("select id from students where email like 'lb-%'")
    await db.end()
    t.same(rows.map(row => row.id).sort((a, b) => a - b), [...created].sort((a, b) => a - b), 'every 201 is in the database, and nothing else')
  })
