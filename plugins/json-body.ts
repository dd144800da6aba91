import fp from 'fastify-plugin'
import { sendError } from './errors.js'

// Trimming a password would silently change it.
const UNTRIMMED = new Set(['password', 'c_password'])

/** Finds a string holding a NUL byte (PostgreSQL cannot store one) and trims the others in place. */
function trimStrings (value: unknown, path: string[]): string[] | undefined {
  if (Array.isArray(value) || (typeof value === 'object' && value !== null)) {
    const record = value as Record<string, unknown>
    for (const key of Object.keys(record)) {
      const item = record[key]
      if (typeof item === 'string') {
        if (item.includes('\u0000')) return [...path, key]
        if (!UNTRIMMED.has(key)) record[key] = item.trim()
      } else {
        const found = trimStrings(item, [...path, key])
        if (found) return found
      }
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

  fastify.addHook('preValidation', async (request, reply) => {
    const nul = trimStrings(request.body, [])
    if (nul) {
      const field = nul.join('.')
      return sendError(reply, 400, `Invalid request body: ${field} must not contain NUL characters`, {
        [field]: ['must not contain NUL characters']
      })
    }
  })
}, { name: 'json-body', dependencies: ['errors'] })
