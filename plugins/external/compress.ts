import fp from 'fastify-plugin'
import compress from '@fastify/compress'

/**
 * Answers compressed as the client accepts (`Accept-Encoding`: br, gzip, deflate, in that
 * order of preference) from 1 KiB on: the OpenAPI document (about 250 KB as JSON), the
 * documentation page's scripts and the list pages. Smaller answers (a record, an error) go as
 * they are: compressing them would cost more than the bytes it saves. A compressed answer
 * says `Vary: Accept-Encoding`, so that a cache keeps each coding apart. A list's tag is
 * weak (the same page, whatever its coding); a record's is strong and names its version,
 * which `If-Match` compares, so it is left as it is. Request bodies are not decompressed: the
 * body limit holds for the bytes as they come.
 */
export default fp(async (fastify) => {
  await fastify.register(compress, {
    encodings: ['br', 'gzip', 'deflate'],
    threshold: 1024,
    // A list page (20 KB for 100 students) compressed in one call rather than through a zlib
    // stream: in the benchmark the stream cost a gzip client's page twice the CPU of the
    // page itself, and the service's memory tripled (docs/performance.md). Larger answers (the
    // OpenAPI document, a page of 1,000) still stream, so as not to hold the event loop.
    syncThreshold: 65536,
    globalDecompression: false
  })
}, { name: 'compress' })
