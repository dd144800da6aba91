// Exports a list through the API (`GET /students` or `/api/clients` with Accept: text/csv or
// application/x-ndjson), filters and sort as the list takes them, to a file or standard output,
// with a progress bar on standard error.
//   npm run export -- --format csv 'age[gte]=18' sort=name > adults.csv
//   API_TOKEN=sk_… npm run export -- --resource clients --format ndjson --out clients.ndjson
import { createWriteStream } from 'node:fs'
import { Transform, type Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { Progress } from './progress.js'

const USAGE = 'Usage: npm run export -- [--format csv|ndjson] [--resource students|clients] [--out <file>] [--url <service>] [<filter or sort>=<value> …]\n' +
  'The service: --url, else API_URL, else http://localhost:3000; a token or API key: API_TOKEN (for clients).'

const { values: options, positionals } = (() => {
  try {
    return parseArgs({ allowPositionals: true, options: { url: { type: 'string' }, resource: { type: 'string', default: 'students' }, format: { type: 'string', default: 'csv' }, out: { type: 'string' } } })
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`)
    process.exit(2)
  }
})()
const paths: Record<string, string> = { students: '/students', clients: '/api/clients' }
const types: Record<string, string> = { csv: 'text/csv', ndjson: 'application/x-ndjson' }
const route = paths[options.resource]
const type = types[options.format]
if (route === undefined || type === undefined || positionals.some(parameter => !parameter.includes('='))) {
  console.error(USAGE)
  process.exit(2)
}
const query = positionals.join('&')
/* c8 ignore next -- the default: no service listens there in the tests */
const base = options.url ?? process.env.API_URL ?? 'http://localhost:3000'
const authorization: Record<string, string> = process.env.API_TOKEN ? { authorization: `Bearer ${process.env.API_TOKEN}` } : {}

/** The service's answer, or its error body told on standard error and exit 1. */
async function get (url: URL, headers: Record<string, string>): Promise<Response> {
  const res = await fetch(url, { headers: { ...authorization, ...headers } }).catch((error: Error) => {
    console.error(`${url.origin}: ${error.message}`)
    process.exit(1)
  })
  if (!res.ok) {
    console.error(`${res.status} ${await res.text()}`)
    process.exit(1)
  }
  return res
}

// The rows to come, for the time left: the list's exact count, one small page.
const counting = new URLSearchParams(query)
counting.set('limit', '1')
counting.set('count', 'exact')
const counted = await get(new URL(`${route}?${counting}`, base), {})
await counted.arrayBuffer()
const total = Number(counted.headers.get('x-total-count') ?? Number.NaN)
const progress = new Progress(`exporting ${options.resource}`, Number.isNaN(total) ? undefined : total)

const res = await get(new URL(`${route}${query ? `?${query}` : ''}`, base), { accept: type })
// A CSV's header line is no row.
let rows = options.format === 'csv' ? -1 : 0
const lines = new Transform({
  transform (chunk: Buffer, _encoding, done) {
    for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) rows++
    progress.update(Math.max(0, rows))
    done(null, chunk)
  }
})
const out: Writable = options.out === undefined ? process.stdout : createWriteStream(options.out)
try {
  await pipeline(res.body!, lines, out)
} catch (error) {
  // Cut off midway (the service or the connection lost): the output is not whole.
  progress.finish(`failed after ${Math.max(0, rows)} rows: ${(error as Error).message}; the output is incomplete`)
  process.exit(1)
}
progress.finish(`${Math.max(0, rows).toLocaleString('en')} rows${options.out === undefined ? '' : ` written to ${options.out}`}`)
