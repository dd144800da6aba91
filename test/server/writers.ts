import pg from 'pg'

export interface Writes {
  /** Requests sent. */
  sent: number
  /** Ids of the students answered 201. */
  created: number[]
  /** Requests that got no answer: their connection was closed or reset under them. */
  unanswered: string[]
  /** Answers other than 201, or 503 with Retry-After and Connection: close. */
  unexpected: string[]
}

/** How a fetch failed: refused (nothing was sent) or anything else, such as a connection closed under the request. */
const failure = (error: { cause?: { code?: string } }) => error.cause?.code === 'ECONNREFUSED' ? 'refused' : `${error.cause?.code ?? String(error)}`

/**
 * `writers` clients on keep-alive connections creating students (e-mail `writer…`) at `url`
 * until the server refuses connections, or until `done()` (a balancer that has taken the server
 * out): what a server that is shutting down does to them.
 */
export async function writeUntilRefused (url: string, writers: number, done = () => false): Promise<Writes> {
  const writes: Writes = { sent: 0, created: [], unanswered: [], unexpected: [] }
  let n = 0
  const client = async () => {
    while (!done()) {
      writes.sent++
      const res = await fetch(`${url}/students`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Writer', email: `writer${++n}@example.com`, age: 20, dob: '2000-01-01' })
      }).catch((error: { cause?: { code?: string } }) => failure(error))
      if (res === 'refused') return
      if (typeof res === 'string') { writes.unanswered.push(res); continue }
      if (res.status === 201) writes.created.push(((await res.json()) as { id: number }).id)
      else if (res.status === 503 && res.headers.get('retry-after') && res.headers.get('connection') === 'close') await res.arrayBuffer()
      else writes.unexpected.push(`${res.status} ${res.headers.get('connection')} ${await res.text()}`)
    }
  }
  await Promise.all(Array.from({ length: writers }, client))
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
