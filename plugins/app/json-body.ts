import { Readable } from 'node:stream'
import fp from 'fastify-plugin'
import { InvalidFields } from '../../lib/http/invalid-fields.js'
import { bodyOptional } from '../../lib/http/optional-body.js'

/**
 * How deep a body may nest objects and arrays. The service's own bodies nest two levels; the
 * limit leaves room and keeps every walk over a body far from the stack's end (a 16 KiB body
 * can nest 8,000 levels).
 */
export const MAX_BODY_DEPTH = 32

// Trimming a password would silently change it.
const UNTRIMMED = new Set(['password', 'c_password', 'current_password'])

/**
 * Trims the strings of a parsed body in place; answers what is wrong with it: the path of a
 * string holding a NUL byte (PostgreSQL cannot store one), or a body nested too deep.
 */
function trimStrings (value: unknown, path: string[]): InvalidFields | undefined {
  if (!(Array.isArray(value) || (typeof value === 'object' && value !== null))) return undefined
  if (path.length >= MAX_BODY_DEPTH) {
    return new InvalidFields({ body: [`must not nest objects or arrays more than ${MAX_BODY_DEPTH} levels deep`] })
  }
  const record = value as Record<string, unknown>
  for (const key of Object.keys(record)) {
    const item = record[key]
    if (typeof item === 'string') {
      if (item.includes('\u0000')) {
        const field = [...path, key].join('.')
        return new InvalidFields({ [field]: ['must not contain NUL characters'] })
      }
      if (!UNTRIMMED.has(key)) record[key] = item.trim()
    } else {
      const invalid = trimStrings(item, [...path, key])
      if (invalid) return invalid
    }
  }
  return undefined
}

/**
 * JSON is the only body the service takes (anything else: 415); its strings are
 * trimmed before validation, so "  " counts as empty.
 */
export default fp(async (fastify) => {
  fastify.removeContentTypeParser('text/plain')

  fastify.addHook('preValidation', async (request) => {
    if (request.body === undefined && bodyOptional(request.routeOptions.schema?.body)) request.body = {}
    // An import's file is a stream, read and checked a row at a time (plugins/app/import-writes.ts).
    if (request.body instanceof Readable) return
    const invalid = trimStrings(request.body, [])
    if (invalid) throw invalid
  })
}, { name: 'json-body', dependencies: ['errors'] })
