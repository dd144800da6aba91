import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'
import { Webhook } from 'standardwebhooks'

/** A delivery as the receiver got it. */
export interface Received {
  headers: http.IncomingHttpHeaders
  body: string
  /** What it answered. */
  status: number
}

/** How the receiver answers a delivery: a status, after a delay. */
export type Behaviour = (received: Omit<Received, 'status'>) => { status: number, delayMs?: number, body?: string }

/**
 * A webhook receiver on 127.0.0.1: it keeps every delivery and answers as `behaviour` says
 * (200 at once by default); `down()` stops listening (connections refused), `up()` listens again
 * on the same port. Closed after the test.
 */
export async function startReceiver (t: Test, behaviour: Behaviour = () => ({ status: 200 })) {
  const received: Received[] = []
  const state = { behaviour }
  const answers = new Set<NodeJS.Timeout>()
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk))
    request.on('end', () => {
      const delivery = { headers: request.headers, body: Buffer.concat(chunks).toString('utf8') }
      const { status, delayMs = 0, body = 'thanks' } = state.behaviour(delivery)
      const answer = setTimeout(() => {
        answers.delete(answer)
        received.push({ ...delivery, status })
        if (!response.destroyed) response.writeHead(status, { 'content-type': 'text/plain' }).end(body)
      }, delayMs)
      answers.add(answer)
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  t.teardown(() => {
    for (const answer of answers) clearTimeout(answer)
    server.closeAllConnections()
    return new Promise<void>(resolve => server.close(() => resolve()))
  })
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    get behaviour () { return state.behaviour },
    set behaviour (next: Behaviour) { state.behaviour = next },
    /** The events received with a 2xx answer, as their bodies tell them, verified with `secret`. */
    delivered (secret: string) {
      const verifier = new Webhook(secret)
      return received.filter(({ status }) => status >= 200 && status < 300)
        .map(({ headers, body }) => verifier.verify(body, headers as Record<string, string>) as { id: number, type: string, resource_id: number, data: Record<string, unknown> })
    },
    async down () {
      server.closeAllConnections()
      await new Promise<void>(resolve => server.close(() => resolve()))
    },
    async up () {
      await new Promise<void>(resolve => server.listen(port, '127.0.0.1', resolve))
    }
  }
}
