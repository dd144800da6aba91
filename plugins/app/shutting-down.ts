import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * Set by server.ts when SIGTERM comes: /health/ready answers 503 so that balancers stop
     * sending, and every answer closes its connection (lib/process/drain.ts), while the
     * requests still sent are served.
     */
    shuttingDown: boolean
  }
}

/** What the service does differently once it is shutting down (server.ts has the sequence). */
export default fp(async (fastify) => {
  fastify.decorate('shuttingDown', false)
  fastify.addHook('onSend', (_request, reply, _payload, done) => {
    if (fastify.shuttingDown) reply.header('connection', 'close')
    done()
  })
}, { name: 'shutting-down' })
