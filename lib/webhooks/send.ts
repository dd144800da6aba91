import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import { ForbiddenAddress, forbiddenRange, hostOf, publicLookup } from './public-address.js'

/** How much of an answer is read and kept, in bytes. */
export const ANSWER_BYTES = 1_024

/** What one attempt found. */
export interface AttemptOutcome {
  /** The answer's status; none if no answer came (refused, timed out, a forbidden address). */
  status: number | null
  /** Why no answer came, or why it did not count. */
  error: string | null
  /** The first ANSWER_BYTES of the answer's body, as text. */
  response: string
  durationMs: number
}

export interface Message {
  url: string
  headers: Record<string, string>
  body: string
}

// Kept-alive connections, as a receiver gets many deliveries. The lookup checks each new one.
const agents = {
  public: { 'http:': new http.Agent({ keepAlive: true, lookup: publicLookup }), 'https:': new https.Agent({ keepAlive: true, lookup: publicLookup }) },
  any: { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) }
}

/** Text as a text column keeps it: PostgreSQL refuses NUL, which a binary or UTF-16 answer holds. */
const storable = (text: string) => text.replaceAll('\0', '\uFFFD')

/**
 * POSTs `message`, waiting at most `timeoutMs` for the whole answer, of which only the first
 * ANSWER_BYTES are read. A redirect is not followed (it is not a 2xx, so it failed). With
 * `allowPrivate` off, a host that resolves to an address that is not public is not reached,
 * nor an address written in the URL itself (which node:http connects to without a lookup).
 * `signal` cuts it short (a shutdown).
 */
export function send (message: Message, { timeoutMs, allowPrivate, signal }: { timeoutMs: number, allowPrivate: boolean, signal: AbortSignal }): Promise<AttemptOutcome> {
  const started = performance.now()
  return new Promise(resolve => {
    let settled = false
    const url = new URL(message.url)
    const host = hostOf(url)
    const range = isIP(host) === 0 || allowPrivate ? undefined : forbiddenRange(host)
    if (range !== undefined) {
      resolve({ status: null, error: new ForbiddenAddress(host, host, range).message, response: '', durationMs: 0 })
      return
    }
    const protocol = url.protocol as 'http:' | 'https:'
    const agent = agents[allowPrivate ? 'any' : 'public'][protocol]
    const cut = () => request.destroy(new Error('cut short by the shutdown'))
    const done = (status: number | null, error: string | null, response: string) => {
      if (settled) return
      settled = true
      signal.removeEventListener('abort', cut)
      resolve({ status, error: error === null ? null : storable(error), response: storable(response), durationMs: Math.round(performance.now() - started) })
    }
    const request = (protocol === 'https:' ? https : http).request(url, {
      method: 'POST',
      agent,
      headers: { ...message.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(message.body) },
      signal: AbortSignal.timeout(timeoutMs)
    }, answer => {
      const chunks: Buffer[] = []
      let length = 0
      const finish = () => {
        // A response of node:http's client always has its status.
        const status = answer.statusCode!
        const ok = status >= 200 && status < 300
        done(status, ok ? null : `answered ${status}`, Buffer.concat(chunks).subarray(0, ANSWER_BYTES).toString('utf8'))
        // What is past the first KB is not read: the connection goes, not back to the pool.
        if (!answer.complete) request.destroy()
      }
      answer.on('data', (chunk: Buffer) => {
        chunks.push(chunk)
        length += chunk.length
        if (length >= ANSWER_BYTES) finish()
      })
      answer.on('end', finish)
      answer.on('error', () => finish())
    })
    request.on('error', error => done(null, error.name === 'AbortError' ? `no answer within ${timeoutMs} ms` : error.message, ''))
    // A listener of its own, removed once done: the shutdown's signal lives as long as the app.
    /* c8 ignore next -- a delivery claimed as the shutdown began */
    if (signal.aborted) cut()
    else signal.addEventListener('abort', cut, { once: true })
    request.end(message.body)
  })
}
