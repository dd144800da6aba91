import { once } from 'node:events'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import type { MetricsConfig } from './config.js'

/** What a scrape answers: the exposition text and its content type (prom-client's registry's). */
export interface Exposition {
  contentType: string
  text: () => Promise<string>
}

/**
 * The metrics listener: `GET /metrics` answers the exposition, anything else 404. A server of
 * its own, apart from the API's port, so that the metrics reach the operator's network only
 * (METRICS_HOST) and the API's hooks, limits and documentation never see a scrape.
 */
export async function serveMetrics (config: MetricsConfig, exposition: Exposition, onError: (error: unknown) => void): Promise<http.Server> {
  const server = http.createServer((request, response) => {
    // A server's requests always have a URL.
    const path = request.url!.split('?')[0]
    if (path !== '/metrics' || (request.method !== 'GET' && request.method !== 'HEAD')) {
      response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not found: the metrics are at GET /metrics\n')
      return
    }
    exposition.text().then(text => {
      response.writeHead(200, { 'content-type': exposition.contentType }).end(request.method === 'HEAD' ? undefined : text)
    }, (error: unknown) => {
      onError(error)
      response.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('The metrics could not be collected\n')
    })
  })
  // A scraper keeps its connection open between scrapes; closing must not wait for it.
  server.keepAliveTimeout = 5_000
  server.listen(config.port, config.host)
  await once(server, 'listening')
  return server
}

/** Where a metrics listener is bound (its port, when METRICS_PORT is 0). */
export const boundAddress = (server: http.Server) => server.address() as AddressInfo

/** Stops the listener and ends its connections, idle or not: a scrape is cheap to retry. */
export async function closeMetrics (server: http.Server): Promise<void> {
  const closed = once(server, 'close')
  server.close()
  server.closeAllConnections()
  await closed
}
