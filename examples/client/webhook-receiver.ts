// A webhook receiver typed from openapi.json's `webhooks` (see the README, "Webhooks"): it
// checks each delivery's signature, takes each event once, and prints the students created.
//
//   WEBHOOK_SECRET='whsec_…' npx tsx examples/client/webhook-receiver.ts 4000
//
// then make a webhook to it (the service needs WEBHOOK_ALLOW_PRIVATE=true to reach 127.0.0.1):
// POST /api/webhooks {"url": "http://127.0.0.1:4000/", "types": ["student.created"]}.
import http from 'node:http'
import { Webhook } from 'standardwebhooks'
import type { webhooks } from './api.js'

type StudentCreated = webhooks['student.created']['post']['requestBody']['content']['application/json']

const verifier = new Webhook(process.env.WEBHOOK_SECRET ?? '')
const seen = new Set<string>()

http.createServer((request, response) => {
  let body = ''
  request.setEncoding('utf8')
  request.on('data', (chunk: string) => { body += chunk })
  request.on('end', () => {
    let event: StudentCreated
    try {
      // The signature over webhook-id, webhook-timestamp and the body as it came, and a
      // timestamp within 5 minutes: else it is not the service's, or it is replayed.
      event = verifier.verify(body, request.headers as Record<string, string>) as StudentCreated
    } catch {
      response.writeHead(401).end()
      return
    }
    // At least once: a delivery whose answer was lost comes again, with the same webhook-id.
    if (!seen.has(request.headers['webhook-id'] as string)) {
      seen.add(request.headers['webhook-id'] as string)
      console.log(`${event.id} ${event.type}: ${event.data.name} <${event.data.email}>`)
    }
    response.writeHead(204).end()
  })
}).listen(Number(process.argv[2] ?? 4000), '127.0.0.1')
