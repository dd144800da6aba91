import type { FastifyInstance } from 'fastify'

/** Every route in this folder and below needs a valid bearer token. */
export default async function authenticated (fastify: FastifyInstance) {
  fastify.addHook('onRequest', fastify.authenticate)
}
