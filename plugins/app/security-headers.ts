import fp from 'fastify-plugin'

/**
 * The security headers that matter for a JSON API (OWASP's REST Security Cheat Sheet): no
 * content sniffing, no framing, HTTPS only, and a policy that lets an answer load nothing
 * if a browser ever renders one. helmet's full set is meant for HTML pages: with it a
 * student's answer took 1,001 bytes, with these 557, for no protection an API needs.
 * The documentation page sets a policy of its own for its scripts.
 */
export const SECURITY_HEADERS: Record<string, string> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer'
}

/**
 * The authenticated interface: its answers hold tokens, secrets (an API key's, an authenticator
 * app's, recovery codes) and users' data, kept by no cache, the browser's neither (RFC 6749
 * 5.1; OWASP). The student interfaces' and the documentation's may be kept.
 */
const AUTHENTICATED_INTERFACE = /^\/api\/(?!v1\/)/

// By the route matched, not the URL as sent: `/%61pi/login` is routed as `/api/login`.

export default fp(async (fastify) => {
  fastify.addHook('onRequest', (request, reply, done) => {
    reply.headers(SECURITY_HEADERS)
    if (AUTHENTICATED_INTERFACE.test(request.routeOptions.url ?? '')) reply.header('cache-control', 'no-store')
    done()
  })
}, { name: 'security-headers', dependencies: ['request-log'] })
