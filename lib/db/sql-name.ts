/** A name the code puts into SQL text itself (a column, a field): its own, never a caller's. */
const NAME = /^[a-z_]+$/

/** The name, unchanged; a name that is not plainly one (quotes, spaces, capitals) is the code's mistake. */
export function sqlName (name: string): string {
  /* c8 ignore next -- a caller's mistake */
  if (!NAME.test(name)) throw new Error(`Not an SQL name: ${name}`)
  return name
}
