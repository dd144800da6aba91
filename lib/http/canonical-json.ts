/**
 * A JSON value's text with every object's keys sorted, at every level (arrays keep their
 * order): two bodies that differ only in the order of their keys read the same. Keys sort by
 * UTF-16 code units, as RFC 8785 (the JSON Canonicalization Scheme) sorts them, whose
 * numbers and strings are JSON.stringify's too.
 */
export function canonicalJson (value: unknown): string | undefined {
  if (Array.isArray(value)) return `[${value.map(item => canonicalJson(item) ?? 'null').join(',')}]`
  if (value === null || typeof value !== 'object') return JSON.stringify(value)
  const fields: string[] = []
  for (const key of Object.keys(value).sort()) {
    const text = canonicalJson((value as Record<string, unknown>)[key])
    if (text !== undefined) fields.push(`${JSON.stringify(key)}:${text}`)
  }
  return `{${fields.join(',')}}`
}
