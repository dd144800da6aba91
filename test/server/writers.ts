import http from 'node:http'
import pg from 'pg'

export interface Writes {
  /** Requests sent. */
  sent: number
  /** Ids of the students answered 201. */
  created: number[]
  /** Requests sent on a kept-alive connection that got no answer: it was closed or reset under them. */
  unanswered: string[]
  /** Answers other than 201, or 503 with Retry-After and Connection: close. */
  unexpected: string[]
  /**
   * Requests on a new connection reset before any answer: connections the kernel had accepted
   * when the listener closed, which it resets (the README says so; none arrives then when
   * SHUTDOWN_DELAY covers the balancer's reaction). Their writer stops, as on a refusal.
   */
  resetNew: number
}

type Outcome = { status: number, headers: http.IncomingHttpHeaders, body: string } | { error: string, reused: boolean }

/** One POST on `agent`'s kept-alive connections, and whether it went on a reused one. */
function post (agent: http.Agent, url: string, body: string): Promise<Outcome> {
  return new Promise(resolve => {
    const req = http.request(`${url}/students`, { method: 'POST', agent, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', chunk => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }))
      res.on('error', error => resolve({ error: String(error), reused: req.reusedSocket }))
    })
    req.on('error', (error: NodeJS.ErrnoException) => resolve({ error: error.code ?? String(error), reused: req.reusedSocket }))
    req.end(body)
  })
}

/**
 * `writers` clients on keep-alive connections creating students (e-mail `writer…`) at `url`
 * until the server refuses connections, or until `done()` (a balancer that has taken the server
 * out): what a server that is shutting down does to them. Node's own client, because it tells
 * whether a request went on a reused connection (`reusedSocket`): a request that a server
 * drops there is the one that must never happen.
 */
export async function writeUntilRefused (url: string, writers: number, done = () => false): Promise<Writes> {
  const writes: Writes = { sent: 0, created: [], unanswered: [], unexpected: [], resetNew: 0 }
  const agent = new http.Agent({ keepAlive: true, maxSockets: writers })
  let n = 0
  const client = async () => {
    while (!done()) {
      writes.sent++
      const res = await post(agent, url, JSON.stringify({ name: 'Writer', email: `writer${++n}@example.com`, age: 20, dob: '2000-01-01' }))
      if ('error' in res) {
        if (res.error === 'ECONNREFUSED') return
        if (!res.reused) { writes.resetNew++; return }
        writes.unanswered.push(res.error)
        continue
      }
      if (res.status === 201) writes.created.push((JSON.parse(res.body) as { id: number }).id)
      else if (!(res.status === 503 && res.headers['retry-after'] && res.headers.connection === 'close')) writes.unexpected.push(`${res.status} ${res.headers.connection} ${res.body}`)
    }
  }
  await Promise.all(Array.from({ length: writers }, client))
  agent.destroy()
  return writes
}

/** The ids of the students the writers' requests left in the database of `env`, in order. */
export async function writtenStudents (env: NodeJS.ProcessEnv): Promise<number[]> {
  const db = new pg.Client({ host: env.DB_HOST, port: Number(env.DB_PORT), database: env.DB_NAME, user: env.DB_USER, password: env.DB_PASSWORD })
  await db.connect()
  const { rows } = await db.query<{ id: number }>("select id from students where email like 'writer%' order by id")
  await db.end()
  return rows.map(row => row.id)
}
