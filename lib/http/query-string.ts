import fastQueryString from 'fast-querystring'
import qs from 'qs'

/** Brackets, as sent or percent-encoded: `age[gte]=18`, `age%5Bgte%5D=18`. */
const BRACKET = /\[|%5b/i

/**
 * The query string parser: OpenAPI's deepObject style (`age[gte]=18&age[lt]=30`, what
 * generated clients send for an object parameter) becomes `{ age: { gte: '18', lt: '30' } }`,
 * one level deep only (`a[b][c]` stays a key `[c]` of `a.b`, which validation refuses).
 * Repeated parameters are arrays, as Fastify makes them; `a[500]=x` is an object, not an
 * array of a length the caller picks. A query string without brackets, every one the hot
 * paths see, is parsed as Fastify parses it by default.
 */
export function parseQueryString (query: string): Record<string, unknown> {
  if (query.length === 0) return {}
  if (!BRACKET.test(query)) return fastQueryString.parse(query)
  return qs.parse(query, { depth: 1, arrayLimit: 100, parameterLimit: 1000, plainObjects: true, allowDots: false, decoder })
}

/**
 * qs drops a `__proto__` key, and the filter or parameter it was in would pass unseen
 * (`id[__proto__][eq]=1` would list everything); renamed, validation refuses it by name.
 */
function decoder (text: string, decode: qs.defaultDecoder, charset: string, type: 'key' | 'value'): string {
  const decoded = decode(text, decode, charset) as string
  return type === 'key' ? decoded.replaceAll('__proto__', '__proto__?') : decoded
}
