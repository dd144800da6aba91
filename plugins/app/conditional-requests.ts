import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { InvalidFields } from '../../lib/http/invalid-fields.js'
import { matchHolds, noneMatchHolds, parseTags, type TagList } from '../../lib/http/entity-tags.js'

declare module 'fastify' {
  interface FastifyReply {
    /**
     * Sends `body` with this `ETag`; a GET or HEAD whose `If-None-Match` holds the tag is
     * answered 304 with no body instead.
     */
    sendTagged: (etag: string, body: unknown) => FastifyReply
  }
  interface FastifyRequest {
    /**
     * The `If-Match` of an update or delete: the tags it lists, `*`, or undefined when it has
     * none (then 428 with REQUIRE_IF_MATCH). A malformed one is refused (400).
     */
    ifMatch: () => TagList | undefined
    /** 412 with the record's current `ETag` unless `tags` (from `ifMatch`) hold it. */
    checkIfMatch: (tags: TagList | undefined, etag: string) => void
  }
}

/** The 412 of a write whose If-Match does not hold the record's current tag. */
export class PreconditionFailedError extends Error {
  override name = 'PreconditionFailedError'
  readonly statusCode = 412
  readonly etag: string
  constructor (etag: string) {
    super('The record has changed since the tag in If-Match was read: read it again (its current tag is in ETag)')
    this.etag = etag
  }
}

function tagsOf (header: string | undefined, name: string): TagList | undefined {
  if (header === undefined) return undefined
  const tags = parseTags(header)
  if (tags === undefined) throw new InvalidFields({ [name]: ['must be * or a comma-separated list of entity tags ("…" or W/"…")'] }, 'headers')
  return tags
}

/**
 * Conditional requests (RFC 9110, section 13), the same for every resource: `ETag` on what a
 * route sends tagged, 304 for a GET or HEAD whose `If-None-Match` holds it, and `If-Match` on
 * updates and deletes, whose check each write makes in the statement or transaction that
 * writes (a tag checked first and written after would let two writers both win).
 * @fastify/etag answers 304 to an exact header only (no lists, no weak comparison) and has
 * nothing for If-Match.
 */
export default fp(async (fastify) => {
  const { requireIfMatch } = fastify.config

  fastify.decorateReply('sendTagged', function (this: FastifyReply, etag: string, body: unknown) {
    this.header('etag', etag)
    const { method, headers } = this.request
    if (headers['if-none-match'] !== undefined && (method === 'GET' || method === 'HEAD')) {
      const tags = tagsOf(headers['if-none-match'], 'if-none-match')!
      if (noneMatchHolds(tags, etag)) return this.code(304).send()
    }
    return this.send(body)
  })

  fastify.decorateRequest('ifMatch', function (this: FastifyRequest) {
    const tags = tagsOf(this.headers['if-match'], 'if-match')
    if (tags === undefined && requireIfMatch) {
      throw fastify.httpErrors.createError(428, 'This service requires If-Match on updates and deletes: read the record, then send its ETag in If-Match')
    }
    return tags
  })

  fastify.decorateRequest('checkIfMatch', function (this: FastifyRequest, tags: TagList | undefined, etag: string) {
    if (tags !== undefined && !matchHolds(tags, etag)) throw new PreconditionFailedError(etag)
  })
}, { name: 'conditional-requests', dependencies: ['config', 'sensible'] })
