// A collector for the traced service of the benchmark: takes whatever is posted to it (OTLP/HTTP
// spans) and answers 200, as a collector would, reading the bodies but keeping nothing. A
// process of its own, so that taking the spans costs neither the service nor the load's.
// It answers 200 to any request: the harness's start() waits for one.
import http from 'node:http'

const server = http.createServer((req, res) => {
  req.resume()
  req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'))
})
server.listen(Number(process.env.PORT), process.env.HOST)
process.on('SIGTERM', () => server.close(() => process.exit(0)))
