import { readFile } from 'node:fs/promises'
import autocannon from 'autocannon'

export interface Request {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  body?: string
  headers?: Record<string, string>
  /** Told of the answer (a PUT that keeps the tag it sends current); reading answers costs the load generator CPU, so only where asked. */
  onResponse?: (status: number, headers: Record<string, string>) => void
}

export interface Figures {
  requestsPerSecond: number
  p50: number
  p99: number
  errors: number
  non2xx: number
  peakRssMb: number
  /** The server's CPU time (its workers' too) per request answered, in µs: steadier than req/s on a shared machine. */
  cpuMicros: number
  /** PostgreSQL's CPU time per request answered, in µs: every process of its server, which only the loaded target uses meanwhile; 0 when the server is not on this machine. */
  dbCpuMicros: number
}

/** A scenario's figures for one target: medians of its runs, and the requests a second of each run, round by round. */
export interface Measured extends Figures {
  rounds: number[]
}

/** A server to load; `next`, when given, makes its requests instead of the scenario's. */
export interface Target {
  url: string
  pid: number
  next?: () => Request
}

/** A figure of a process and its children (workers), summed, from /proc (0 where there is none). */
async function processTree (pid: number, read: (pid: number) => Promise<number>): Promise<number> {
  const children = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '')
  const ofChildren = await Promise.all(children.split(' ').filter(Boolean).map(child => processTree(Number(child), read)))
  return await read(pid) + ofChildren.reduce((a, b) => a + b, 0)
}

/** Resident set size in MB, of a process and its children. */
export const rssMb = (pid: number) => processTree(pid, async pid => {
  const kb = /VmRSS:\s+(\d+) kB/.exec(await readFile(`/proc/${pid}/status`, 'utf8').catch(() => ''))?.[1]
  return kb ? Number(kb) / 1024 : 0
})

/** A process's fields in /proc/<pid>/stat after its name, from the state on (none if it is gone). */
async function statFields (pid: number): Promise<string[] | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ') : undefined
}

/** CPU time used so far (user and system), in clock ticks of 10 ms. */
const cpuTicks = (pid: number) => processTree(pid, async pid => {
  const fields = await statFields(pid)
  return fields ? Number(fields[11]) + Number(fields[12]) : 0
})

/**
 * The CPU time of a PostgreSQL server so far: its postmaster's processes, and those of its
 * children that have exited (the postmaster waits for each, which adds it to its own count).
 */
async function databaseTicks (postmaster: number | undefined): Promise<number> {
  if (postmaster === undefined) return 0
  const fields = await statFields(postmaster)
  return fields ? await cpuTicks(postmaster) + Number(fields[13]) + Number(fields[14]) : 0
}

/** Runs `work` while sampling the resident memory of `pid` (and its children) every 50 ms: its result, and the peak in MB. */
export async function withPeakRss<T> (pid: number, work: () => Promise<T>): Promise<{ result: T, peakMb: number }> {
  let peakMb = 0
  const sampler = setInterval(() => { rssMb(pid).then(mb => { peakMb = Math.max(peakMb, mb) }, () => {}) }, 50)
  try {
    return { result: await work(), peakMb }
  } finally {
    clearInterval(sampler)
  }
}

/** The postmaster of the backend `backendPid`, when the server runs on this machine. */
export async function postmasterOf (backendPid: number): Promise<number | undefined> {
  const fields = await statFields(backendPid)
  return fields ? Number(fields[1]) : undefined
}

/** One autocannon run: `connections` keep-alive connections for `seconds`, each request from `next()`. */
export async function load (url: string, next: () => Request, seconds: number, connections: number, pid: number, postmaster?: number): Promise<Figures> {
  let peak = await rssMb(pid)
  const ticksBefore = await cpuTicks(pid)
  const databaseTicksBefore = await databaseTicks(postmaster)
  const sampler = setInterval(() => { rssMb(pid).then(mb => { peak = Math.max(peak, mb) }, () => {}) }, 100)
  const watched = next().onResponse !== undefined
  try {
    const result = await autocannon({
      url,
      connections,
      duration: seconds,
      requests: [{
        setupRequest: (request, context) => {
          const sent = next();
          (context as { sent?: Request }).sent = sent
          const { method, path, body, headers } = sent
          return { ...request, method, path, ...(body && { body }), headers: { ...headers, ...(body && { 'content-type': 'application/json' }) } }
        },
        ...(watched && {
          onResponse: (status: number, _body: string, context: object, headers: unknown) => {
            (context as { sent: Request }).sent.onResponse!(status, headers as Record<string, string>)
          }
        })
      }]
    })
    const ticks = await cpuTicks(pid) - ticksBefore
    const ofDatabase = await databaseTicks(postmaster) - databaseTicksBefore
    return {
      requestsPerSecond: result.requests.average,
      p50: result.latency.p50,
      p99: result.latency.p99,
      errors: result.errors + result.timeouts,
      non2xx: result.non2xx,
      peakRssMb: peak,
      cpuMicros: ticks * 10_000 / Math.max(1, result.requests.total),
      dbCpuMicros: ofDatabase * 10_000 / Math.max(1, result.requests.total)
    }
  } finally {
    clearInterval(sampler)
  }
}

export function median (values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2
}

/**
 * The median, over the rounds, of a's rate over b's in the same round: two rates measured in
 * the same rounds compared run against neighbouring run, so that the machine's drift over
 * minutes, which moves both alike, cancels.
 */
export const pairedRatio = (a: number[], b: number[]) => median(a.map((rate, i) => rate / b[i]!))

/**
 * A warm-up run on each target, then `repeat` rounds of one run on each target in turn, so
 * that the machine's drift over minutes falls on every target alike, in the reverse order
 * every other round, so that what one target's run leaves behind (autovacuum of the rows it
 * wrote, a checkpoint) does not always fall on the run after it; per target, the median
 * of each figure, errors summed. `afterRound` runs at the end of each round, for whatever
 * else is to be measured in the same rounds.
 */
export async function measure (
  targets: Target[],
  next: () => Request,
  opts: { seconds: number, warmup: number, repeat: number, connections: number, postmaster?: number | undefined },
  afterRound: () => Promise<void> = async () => {}
): Promise<Measured[]> {
  const run = (target: Target, seconds: number) => load(target.url, target.next ?? next, seconds, opts.connections, target.pid, opts.postmaster)
  if (opts.warmup > 0) for (const target of targets) await run(target, opts.warmup)
  const runs: Figures[][] = targets.map(() => [])
  for (let i = 0; i < opts.repeat; i++) {
    const order = [...targets.entries()]
    if (i % 2 === 1) order.reverse()
    for (const [t, target] of order) runs[t]!.push(await run(target, opts.seconds))
    await afterRound()
  }
  return runs.map(figures => ({
    requestsPerSecond: median(figures.map(r => r.requestsPerSecond)),
    p50: median(figures.map(r => r.p50)),
    p99: median(figures.map(r => r.p99)),
    errors: figures.reduce((sum, r) => sum + r.errors, 0),
    non2xx: figures.reduce((sum, r) => sum + r.non2xx, 0),
    peakRssMb: Math.max(...figures.map(r => r.peakRssMb)),
    cpuMicros: median(figures.map(r => r.cpuMicros)),
    dbCpuMicros: median(figures.map(r => r.dbCpuMicros)),
    rounds: figures.map(r => r.requestsPerSecond)
  }))
}
