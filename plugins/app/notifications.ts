import fp from 'fastify-plugin'
import type pg from 'pg'
import { knexConfig } from '../../lib/db/knex-config.js'
import { NotificationListener } from '../../lib/db/notification-listener.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The process's one connection listening for PostgreSQL's notifications, made at the first channel asked for. */
    notifications: NotificationListener
  }
}

/** `fastify.notifications`: LISTEN on a direct connection (behind a transaction-mode pooler, PostgreSQL itself). */
export default fp(async (fastify) => {
  const listener = new NotificationListener(knexConfig(fastify.config, { direct: true }).connection as pg.ClientConfig, fastify.log)
  fastify.decorate('notifications', listener)
  fastify.addHook('onClose', () => listener.stop())
}, { name: 'notifications', dependencies: ['config'] })
