// A collector for the traced service of the benchmark: takes whatever is posted to it (OTLP/HTTP
// spans) and answers 200, as a collector would, keeping nothing but a count of the spans
// (`GET /spans` tells it: bench/tracing.ts checks that each way made the spans it says). A
// process of its own, so that taking the spans costs neither the service nor the load's.
// It answers 200 to any request: the harness's start() waits for one.
import http from 'node:http'

let spans = 0
const server = http.createServer((req, res) => {
  if (req.method === 'GET' && req.url === '/spans') return res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ spans }))
  let body = ''
  req.setEncoding('utf8')
  req.on('data', chunk => { body += chunk })
  req.on('end', () => {
    // OTLP/HTTP JSON: one "spanId" a span (a parent's is "parentSpanId").
    spans += body.split('"spanId"').length - 1
    res.writeHead(200, { 'content-type': 'application/json' }).end('{}')
  })
})
server.listen(Number(process.env.PORT), process.env.HOST)
process.on('SIGTERM', () => server.close(() => process.exit(0)))
