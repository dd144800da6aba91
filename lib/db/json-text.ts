/**
 * jsonb refuses the escape of a lone surrogate, which JSON.stringify writes: a text holding one
 * is kept with U+FFFD in its place, as PostgreSQL's text columns get it from pg.
 */
const LONE_SURROGATE = /\p{Cs}/gu
const wellFormed = (_: string, value: unknown) => typeof value === 'string' ? value.replace(LONE_SURROGATE, '\uFFFD') : value

/** `value` as JSON text that jsonb takes. */
export function jsonText (value: unknown): string {
  return JSON.stringify(value, wellFormed)
}
