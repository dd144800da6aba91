import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import type { Versioned } from '../../../../lib/db/row-versions.js'
import { versionTag } from '../../../../lib/http/entity-tags.js'
import { InvalidFields } from '../../../../lib/http/invalid-fields.js'
import { urlProblem } from '../../../../lib/webhooks/public-address.js'
import type { RecordKind } from '../../../../plugins/app/write-path.js'
import { eventsRepository } from '../events/repository.js'
import { webhooksRepository } from './repository.js'
import { DELIVERY_ORDER, deliveryListFields, type Webhook, type WebhookChange, webhookSchemas, webhookSharedSchemas, webhooksTag } from './schema.js'

/** The resource of an event type: `student` of `student.created`. */
const resourceOf = (type: string) => type.slice(0, type.indexOf('.'))

/**
 * `/api/webhooks`: endpoints that receive the change feed's events, behind webhook-*. The
 * dispatcher (plugins/app/webhook-dispatcher.ts) sends them; these routes manage them and
 * show what was sent.
 */
const webhooks: FastifyPluginAsyncTypebox = async (fastify) => {
  fastify.declareResource({ tag: webhooksTag, schemas: webhookSharedSchemas })
  const repository = webhooksRepository(fastify.database)
  const { allowPrivate } = fastify.config.webhooks
  const { conflict, forbidden, notFound } = fastify.httpErrors
  const missing = (id: number) => notFound(`Webhook ${id} not found`)
  // Audited; not in the change feed, which tells of the records clients keep copies of.
  const kind: RecordKind<Versioned<Webhook>> = { resource: 'webhook', lock: repository.lock, notFound: missing, followed: false }
  // Permissions come with the migrations only, which have run before routes are registered.
  const guarded = await eventsRepository(fastify.database).guardedResources()

  /**
   * Refuses what the webhook may not be (400): a URL it may not reach (lib/webhooks/public-address.ts),
   * a type no resource has.
   */
  async function check ({ url, types }: Pick<WebhookChange, 'url' | 'types'>): Promise<void> {
    const problems: Record<string, string[]> = {}
    if (url !== undefined) {
      let parsed: URL | undefined
      try {
        parsed = new URL(url)
      } catch {
        problems.url = ['must be an absolute URL (a port up to 65535, a host name or an IP address)']
      }
      if (parsed?.port === '0') problems.url = ['must not name port 0']
      const problem = parsed && problems.url === undefined ? await urlProblem(parsed, allowPrivate) : undefined
      if (problem !== undefined) problems.url = [problem]
    }
    const unknown = (types ?? []).filter(type => !fastify.followedResources.has(resourceOf(type)))
    if (unknown.length > 0) problems.types = [`names no event type: ${unknown.join(', ')} (of ${[...fastify.followedResources.keys()].join(', ')})`]
    if (Object.keys(problems).length > 0) throw new InvalidFields(problems)
  }

  /**
   * Refuses (403) a webhook that would send the caller events it may not read: one who sets
   * where a webhook's events go, or which, needs event-list and may list their resources (as
   * GET /api/events shows them), whichever field changes.
   */
  function mayReceive (request: FastifyRequest, types: readonly string[]): void {
    if (!request.user.permissions.has('event-list')) throw forbidden('Setting where a webhook\'s events go, or which, needs the event-list permission')
    const hidden = types.filter(type => guarded.includes(resourceOf(type)) && !request.user.permissions.has(`${resourceOf(type)}-list`))
    if (hidden.length > 0) throw forbidden(`A webhook cannot take events of resources you may not list: ${hidden.join(', ')}`)
  }

  fastify.get('/', { schema: webhookSchemas.index, onRequest: fastify.can('webhook-list') }, async () => {
    return { success: true as const, data: await repository.list() }
  })

  fastify.get('/:id', { schema: webhookSchemas.show, onRequest: fastify.can('webhook-list') }, async (request, reply) => {
    const webhook = await repository.find(request.params.id)
    if (!webhook) throw missing(request.params.id)
    return reply.sendTagged(versionTag(webhook.version), { success: true as const, data: webhook })
  })

  fastify.post('/', { schema: webhookSchemas.store, onRequest: fastify.can('webhook-create') }, async (request, reply) => {
    mayReceive(request, request.body.types)
    await check(request.body)
    let secret = ''
    // Not replayed: the answer holds the secret, which is never answered twice.
    await request.createRecord(reply, kind, async trx => {
      const made = await repository.create(request.body, trx)
      secret = made.secret
      return made.record
    }, webhook => ({ body: { success: true as const, data: webhook, secret, message: 'Webhook made: its secret is shown this once' }, location: `${fastify.prefix}/${webhook.id}` }), { replayed: false })
    fastify.webhookDispatcher.wake()
    return reply
  })

  fastify.patch('/:id', { schema: webhookSchemas.update, onRequest: fastify.can('webhook-edit') }, async (request, reply) => {
    const { id } = request.params
    const { body } = request
    // Who may not send its events elsewhere learns nothing of the URL they gave (how an
    // internal name resolves): refused first, and again under the lock.
    if (body.url !== undefined || body.types !== undefined) {
      const current = await repository.find(id)
      if (!current) throw missing(id)
      mayReceive(request, body.types ?? current.types)
    }
    await check(body)
    const webhook = await request.updateRecord(reply, kind, id, (trx, before) => {
      if (body.url !== undefined || body.types !== undefined) mayReceive(request, body.types ?? before.types)
      return repository.update(before, body, trx)
    })
    fastify.webhookDispatcher.wake()
    return { success: true as const, data: webhook, message: 'Webhook updated' }
  })

  fastify.post('/:id/rotate-secret', { schema: webhookSchemas.rotateSecret, onRequest: fastify.can('webhook-edit') }, async (request, reply) => {
    const { id } = request.params
    let secret = ''
    const webhook = await request.updateRecord(reply, kind, id, async trx => {
      const rotated = await repository.rotateSecret(id, trx)
      secret = rotated.secret
      return rotated.record
    }, { secrets: ['secret'] })
    return { success: true as const, data: webhook, secret, message: 'Secret rotated: the new one is shown this once, and the previous one signs beside it for 24 hours' }
  })

  fastify.delete('/:id', { schema: webhookSchemas.destroy, onRequest: fastify.can('webhook-delete') }, async (request) => {
    const { id } = request.params
    const webhook = await request.deleteRecord(kind, id, trx => repository.remove(id, trx))
    // The last one gone, the dispatcher stops following the feed.
    fastify.webhookDispatcher.wake()
    return { success: true as const, data: webhook, message: 'Webhook deleted' }
  })

  fastify.get('/:id/deliveries', { schema: webhookSchemas.deliveries, onRequest: fastify.can('webhook-list') }, async (request, reply) => {
    const { id } = request.params
    if (!await repository.find(id)) throw missing(id)
    const list = fastify.lists.request(request, deliveryListFields, DELIVERY_ORDER)
    return fastify.lists.send(reply, list, await repository.deliveries(id, list), { path: `${fastify.prefix}/${id}/deliveries`, envelope: true })
  })

  fastify.post('/:id/deliveries/:delivery/retry', { schema: webhookSchemas.retry, onRequest: fastify.can('webhook-edit') }, async (request, reply) => {
    const { id, delivery } = request.params
    const retried = await request.recordEvents(async trx => {
      const found = await repository.retry(id, delivery, trx)
      if (!found) throw notFound(`Delivery ${delivery} of webhook ${id} not found`)
      if (found === 'in flight') throw conflict(`An attempt of delivery ${delivery} is under way: its outcome is in the log within WEBHOOK_TIMEOUT`)
      if (found === 'disabled') throw conflict(`Webhook ${id} is disabled: enable it (PATCH {"enabled": true}), and its pending deliveries are sent`)
      if ('notTaken' in found) throw conflict(`Webhook ${id} no longer takes ${found.notTaken}: its delivery is not sent again`)
      return { result: found, events: [{ action: 'retry', resource: 'webhook_delivery', id: delivery, after: { webhook_id: id, event_id: found.event_id } }] }
    })
    fastify.webhookDispatcher.wake()
    return reply.code(202).send({ success: true as const, data: retried })
  })
}

export default webhooks
