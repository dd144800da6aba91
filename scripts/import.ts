// Imports a CSV or NDJSON file through the API (`POST /students/import` or `/api/clients/import`),
// streamed, with a progress bar on standard error, and prints the answer. One Idempotency-Key
// for the file: a connection lost, or the service busy, is retried without a second copy.
//   npm run import -- students.csv [--url http://localhost:3000] [--on-conflict skip]
//   API_TOKEN=sk_… npm run import -- clients.ndjson --resource clients
import { randomUUID } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import http from 'node:http'
import https from 'node:https'
import path from 'node:path'
import { Transform } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { parseArgs } from 'node:util'
import { Progress } from './progress.js'

const USAGE = 'Usage: npm run import -- <file.csv | file.ndjson> [--url <service>] [--resource students|clients] [--on-conflict error|skip|update] [--key <Idempotency-Key>] [--attempts <n>]\n' +
  'The service: --url, else API_URL, else http://localhost:3000; a token or API key: API_TOKEN (for clients).'

const { values: options, positionals } = (() => {
  try {
    return parseArgs({ allowPositionals: true, options: { url: { type: 'string' }, resource: { type: 'string', default: 'students' }, 'on-conflict': { type: 'string' }, key: { type: 'string' }, attempts: { type: 'string', default: '5' } } })
  } catch (error) {
    console.error(`${(error as Error).message}\n${USAGE}`)
    process.exit(2)
  }
})()
const file = positionals[0]
const paths: Record<string, string> = { students: '/students/import', clients: '/api/clients/import' }
const route = paths[options.resource]
const ATTEMPTS = Number(options.attempts)
if (positionals.length !== 1 || route === undefined || !(Number.isInteger(ATTEMPTS) && ATTEMPTS >= 1)) {
  console.error(USAGE)
  process.exit(2)
}
const type = /\.csv$/i.test(file!) ? 'text/csv' : /\.(nd)?jsonl?$/i.test(file!) ? 'application/x-ndjson' : undefined
if (type === undefined) {
  console.error(`${file}: name a .csv or an .ndjson (.jsonl) file\n${USAGE}`)
  process.exit(2)
}
/* c8 ignore next -- the default: no service listens there in the tests */
const base = options.url ?? process.env.API_URL ?? 'http://localhost:3000'
const url = new URL(`${route}${options['on-conflict'] === undefined ? '' : `?on_conflict=${encodeURIComponent(options['on-conflict'])}`}`, base)
const headers: Record<string, string> = {
  'content-type': type,
  'idempotency-key': options.key ?? randomUUID(),
  ...(process.env.API_TOKEN && { authorization: `Bearer ${process.env.API_TOKEN}` })
}

const { size } = await stat(file!).catch((error: Error) => {
  console.error(error.message)
  process.exit(1)
})

interface Answer { status: number, body: string, retryAfter?: string | undefined }

/** Sends the file once, the progress told as its bytes go (a header line is no row). */
async function send (progress: Progress): Promise<Answer> {
  let bytes = 0
  let lines = type === 'text/csv' ? -1 : 0
  const counted = new Transform({
    transform (chunk: Buffer, _encoding, done) {
      bytes += chunk.length
      for (let at = chunk.indexOf(10); at >= 0; at = chunk.indexOf(10, at + 1)) lines++
      progress.update(Math.max(0, lines), bytes)
      done(null, chunk)
    },
    flush (done) {
      progress.note(`${Math.max(0, lines).toLocaleString('en')} rows sent; the service checks and writes them…`)
      done()
    }
  })
  return new Promise((resolve, reject) => {
    let sending = false
    const request = (url.protocol === 'https:' ? https : http).request(url, { method: 'POST', headers: { ...headers, 'content-length': String(size), expect: '100-continue' } }, response => {
      clearTimeout(unheard)
      request.off('continue', sendFile)
      let body = ''
      response.setEncoding('utf8').on('data', chunk => { body += chunk }).on('end', () => {
        resolve({ status: response.statusCode!, body, retryAfter: response.headers['retry-after'] })
        // Answered before it was told to send the file (busy, refused): the file stays here.
        if (!sending) request.destroy()
      })
      response.on('error', reject)
    })
    request.on('error', error => {
      clearTimeout(unheard)
      reject(error)
    })
    // The file goes once the service says so (100 Continue), or, as curl does, after a second
    // without a word (a proxy that does not pass the 100 on); never once it has answered.
    // Either way takes the other away, and so does the answer: it goes once at most.
    const sendFile = () => {
      clearTimeout(unheard)
      request.off('continue', sendFile)
      sending = true
      pipeline(createReadStream(file!), counted, request).catch(reject)
    }
    const unheard = setTimeout(sendFile, 1000)
    request.on('continue', sendFile)
  })
}

let answer: Answer | undefined
for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
  const progress = new Progress(`importing ${path.basename(file!)}`, size)
  try {
    answer = await send(progress)
  } catch (error) {
    progress.finish(`the connection failed (${(error as Error).message})`)
    answer = undefined
  }
  // Busy (503), or the same key still under way (409 with Retry-After): sent again, as a lost
  // connection is; the key makes it safe.
  const again = answer === undefined || answer.status === 503 || (answer.status === 409 && answer.retryAfter !== undefined)
  if (answer !== undefined) progress.finish(`answered ${answer.status}`)
  if (!again || attempt === ATTEMPTS) break
  const seconds = Math.max(Number(answer?.retryAfter ?? 0), 2 ** (attempt - 1))
  process.stderr.write(`trying again in ${seconds} s, with the same Idempotency-Key\n`)
  await new Promise(resolve => setTimeout(resolve, seconds * 1000))
}
if (answer === undefined) process.exit(1)
process.stdout.write(answer.body + '\n')
process.exit(answer.status === 200 ? 0 : 1)
