import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { settledPosition } from '../../../../lib/db/settled-position.js'
import { AUDIT_ORDER, AuditEntry, auditListFields, auditSchemas, auditSharedSchemas, auditTag } from './schema.js'

/** The ids that may be null as numbers: pg reads a bigint as text, which a nullable integer's schema refuses. */
const IDS = ['actor_id', 'key_id', 'session_id', 'resource_id']

/**
 * `/api/audit`: the audit log (plugins/app/audit.ts writes it), read-only, behind audit-list.
 * A page shows entries up to the settled position only: one that follows `next` in id order
 * skips no entry whose transaction was still in flight (lib/db/settled-position.ts).
 */
const audit: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: auditTag, schemas: auditSharedSchemas })
  const { knex } = fastify
  const columns = ['id', 'at', ...IDS.map(id => knex.raw(`${id}::float8 as ${id}`)), 'ip', 'request_id', 'action', 'resource', 'before', 'after']
  const entries = keysetTable(fastify.database, { name: 'audit', rows: knex => knex('audit_log'), columns, schema: AuditEntry, fields: auditListFields, idType: 'bigint', settled: true })
  const settled = settledPosition(fastify.database)

  fastify.get('/', { schema: auditSchemas.index, onRequest: fastify.can('audit-list') }, async (request, reply) => {
    const list = fastify.lists.request(request, auditListFields, AUDIT_ORDER)
    return fastify.lists.send(reply, list, await entries.query(list, await settled()), { path: fastify.prefix, envelope: true })
  })
}

export default audit
