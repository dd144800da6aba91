// The change feed under load, for npm run bench: how long an event takes from its write's
// answer to a stream's message, with writes spread over two instances at a steady rate; and
// how many webhook deliveries a second two instances send to a receiver on this machine.
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import pg from 'pg'
import { anotherDatabase, start, stop, type BenchDatabase, type Server } from './harness.js'

export interface FeedFigures {
  /** Writes answered 201 a second, and those answered otherwise. */
  writesPerSecond: number
  failedWrites: number
  /** From a write's answer to its event's message on a stream of the other instance or its own, in ms. */
  lagP50: number
  lagP99: number
  lagMax: number
  /** Events whose message never came within 10 s of the last write. */
  missed: number
  /** Webhook deliveries a second, two instances sending, each answered at once. */
  deliveriesPerSecond: number
  deliveries: number
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ?? 0

/** The messages of a stream, by the email of the student each event holds; ends with `close()`. */
async function follow (url: string, token: string, arrived: (email: string) => void) {
  const controller = new AbortController()
  const res = await fetch(`${url}/api/events/stream?type[eq]=student.created`, { headers: { authorization: `Bearer ${token}` }, signal: controller.signal })
  if (!res.ok || !res.body) throw new Error(`stream: ${res.status}`)
  const reading = (async () => {
    let text = ''
    for await (const chunk of res.body!.pipeThrough(new TextDecoderStream())) {
      text += chunk
      for (let end = text.indexOf('\n\n'); end >= 0; end = text.indexOf('\n\n')) {
        const data = text.slice(0, end).split('\n').find(line => line.startsWith('data: '))
        text = text.slice(end + 2)
        if (data) arrived((JSON.parse(data.slice(6)) as { data: { email: string } }).data.email)
      }
    }
  })().catch(() => {})
  return { close: async () => { controller.abort(); await reading } }
}

/**
 * Writes `rate` students a second for `seconds`, half through each of two instances, while a
 * stream on each follows the feed; then inserts `events` events at once and measures how fast
 * two instances deliver them to a webhook. On a database of its own on `server`: any other
 * instance of the service on the benchmark's database would claim deliveries too (and, not
 * allowed private addresses, fail them all to the receiver on 127.0.0.1).
 */
export async function benchFeed (server: BenchDatabase['server'], { rate = 1_000, seconds = 10, events = 20_000 } = {}): Promise<FeedFigures> {
  const { database, env: base, drop } = await anotherDatabase(server)
  const env = { ...base, WEBHOOK_ALLOW_PRIVATE: 'true' }
  const instances: Server[] = []
  const db = new pg.Client({ ...server, database })
  try {
    instances.push(await start('feed instance A', ['dist/server.js'], env), await start('feed instance B', ['dist/server.js'], env))
    await db.connect()
    const token = await adminToken(instances[0]!.url, db)
    // Lag: every write's answer, and its message on each stream.
    const answered = new Map<string, number>()
    const arrivals = new Map<string, number[]>()
    const arrived = (email: string) => {
      arrivals.set(email, [...arrivals.get(email) ?? [], performance.now()])
    }
    const streams = await Promise.all(instances.map(instance => follow(instance.url, token, arrived)))
    const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
    let failed = 0
    const post = (url: string, email: string) => new Promise<void>(resolve => {
      const body = JSON.stringify({ name: 'Feed Student', email, age: 30, dob: '1995-05-05' })
      const request = http.request(`${url}/students`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => {
        res.resume()
        res.on('end', () => {
          const now = performance.now()
          if (res.statusCode !== 201) failed++
          else answered.set(email, now)
          resolve()
        })
      })
      request.on('error', () => { failed++; resolve() })
      request.end(body)
    })
    const pending: Promise<void>[] = []
    const began = performance.now()
    const tickMs = 10
    for (let tick = 0, sent = 0; tick * tickMs < seconds * 1_000; tick++) {
      const due = Math.round(((tick + 1) * tickMs / 1_000) * rate)
      for (; sent < due; sent++) pending.push(post(instances[sent % 2]!.url, `feed${sent}-${process.pid}@example.com`))
      const wait = began + (tick + 1) * tickMs - performance.now()
      if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
    }
    await Promise.all(pending)
    const elapsed = (performance.now() - began) / 1_000
    // Each event on both streams: wait for the last ones. A message that came before its
    // write's answer has no lag at all.
    const count = () => [...answered.keys()].reduce((sum, email) => sum + Math.min(2, arrivals.get(email)?.length ?? 0), 0)
    for (const deadline = Date.now() + 10_000; count() < answered.size * 2 && Date.now() < deadline;) await new Promise(resolve => setTimeout(resolve, 50))
    await Promise.all(streams.map(stream => stream.close()))
    agent.destroy()
    const lags = [...answered].flatMap(([email, at]) => (arrivals.get(email) ?? []).map(when => Math.max(0, when - at))).sort((a, b) => a - b)

    // Deliveries: a receiver answering at once, a webhook for student.created, then `events`
    // events written in one statement.
    const received = new Set<string>()
    let last = 0
    const receiver = http.createServer((request, response) => {
      request.resume()
      request.on('end', () => {
        received.add(request.headers['webhook-id'] as string)
        last = performance.now()
        response.writeHead(204).end()
      })
    })
    await new Promise<void>(resolve => receiver.listen(0, '127.0.0.1', resolve))
    const made = await fetch(`${instances[0]!.url}/api/webhooks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/`, types: ['student.created'] })
    })
    if (made.status !== 201) throw new Error(`webhook: ${made.status} ${await made.text()}`)
    // The other instance finds it at its next look (every 10 s): it is told at once here.
    await new Promise(resolve => setTimeout(resolve, 10_500))
    const inserted = performance.now()
    await db.query(`insert into change_outbox (resource, action, resource_id, data)
      select 'student', 'create', g, jsonb_build_object('id', g) from generate_series(1, ${events}) g`)
    for (const deadline = Date.now() + 120_000; received.size < events && Date.now() < deadline;) await new Promise(resolve => setTimeout(resolve, 50))
    receiver.closeAllConnections()
    receiver.close()

    return {
      writesPerSecond: answered.size / elapsed,
      failedWrites: failed,
      lagP50: percentile(lags, 0.5),
      lagP99: percentile(lags, 0.99),
      lagMax: lags.at(-1) ?? 0,
      missed: answered.size * 2 - lags.length,
      deliveriesPerSecond: received.size / ((last - inserted) / 1_000),
      deliveries: received.size
    }
  } finally {
    for (const instance of instances) await stop(instance)
    await db.end()
    await drop()
  }
}

/** A token of a user registered on `url` and made an Admin. */
async function adminToken (url: string, db: pg.Client): Promise<string> {
  const credentials = { email: 'feed@example.com', password: 'a benchmark password' }
  const json = (body: unknown) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  const registered = await fetch(`${url}/api/register`, json({ name: 'Feed', ...credentials, c_password: credentials.password }))
  if (registered.status !== 201) throw new Error(`register: ${registered.status} ${await registered.text()}`)
  await db.query('insert into user_roles (user_id, role_id) select u.id, r.id from users u, roles r where u.email = $1 and r.name = \'Admin\'', [credentials.email])
  const login = await fetch(`${url}/api/login`, json(credentials))
  if (login.status !== 200) throw new Error(`login: ${login.status} ${await login.text()}`)
  return (await login.json() as { data: string }).data
}
