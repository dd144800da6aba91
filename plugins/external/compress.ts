import fp from 'fastify-plugin'
import type { RouteOptions } from 'fastify'
import compress from '@fastify/compress'
import { DOCUMENTATION_PATH } from '../../lib/http/documentation.js'

/**
 * What can answer past the threshold: the documentation (the OpenAPI document, the page's
 * scripts) and the lists, whose query string takes `limit`.
 */
function mayAnswerLarge (route: RouteOptions): boolean {
  const query = route.schema?.querystring as { properties?: Record<string, unknown> } | undefined
  return route.url.startsWith(DOCUMENTATION_PATH) || query?.properties?.limit !== undefined
}

/**
 * Answers compressed as the client accepts (`Accept-Encoding`: br, gzip, deflate, in that
 * order of preference) from 1 KiB on, on the documentation's routes and the lists'. A compressed
 * answer says `Vary: Accept-Encoding`, so that a cache keeps each coding apart; a page's tag is
 * weak, the same page in any coding. The other routes (a record, a write, a probe) answer far
 * less than 1 KiB and get none of the plugin's hooks: the hot paths pay nothing for it. Request
 * bodies are not decompressed: the body limit holds for the bytes as they come.
 */
export default fp(async (fastify) => {
  // Before the plugin's own onRoute hook, which reads the route's `compress`.
  fastify.addHook('onRoute', route => {
    if (!mayAnswerLarge(route)) route.compress = false
  })
  await fastify.register(compress, {
    encodings: ['br', 'gzip', 'deflate'],
    threshold: 1024,
    // A page of 100 compressed in one call rather than through a zlib stream per answer: in
    // the benchmark the stream nearly doubled a gzip client's CPU a page and tripled the
    // service's memory (docs/performance.md, "Compression"). Larger answers (the OpenAPI
    // document, a page of 1,000) still stream, so as not to hold the event loop.
    syncThreshold: 65536,
    globalDecompression: false
  })
}, { name: 'compress' })
