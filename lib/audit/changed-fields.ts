/** Fields an audit entry leaves out: the entry's own time tells when, and a version is the database's. */
export const LEFT_OUT: ReadonlySet<string> = new Set(['created_at', 'updated_at', 'version'])

/** What an audit entry shows of a secret that changed (a password): that it changed, never its value. */
export const REDACTED = '[redacted]'

type Fields = Record<string, unknown>

/** The record without the fields an entry leaves out. */
function shown (record: Fields): Fields {
  return Object.fromEntries(Object.entries(record).filter(([name]) => !LEFT_OUT.has(name)))
}

/**
 * What an audit entry keeps of a change: a created record whole (`after`), a deleted one whole
 * (`before`), and of an update only the fields that changed, as they were and as they became.
 * `secrets` are fields whose values never reach the log: each one named is shown as REDACTED
 * on both sides, whether or not the record holds it.
 */
export function changedFields (before: Fields | null, after: Fields | null, secrets: readonly string[] = []): { before: Fields | null, after: Fields | null } {
  const redacted = Object.fromEntries(secrets.map(name => [name, REDACTED]))
  if (before === null || after === null) {
    return {
      before: before && { ...shown(before), ...redacted },
      after: after && { ...shown(after), ...redacted }
    }
  }
  const was: Fields = {}
  const is: Fields = {}
  for (const name of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (LEFT_OUT.has(name) || JSON.stringify(before[name]) === JSON.stringify(after[name])) continue
    was[name] = before[name]
    is[name] = after[name]
  }
  return { before: { ...was, ...redacted }, after: { ...is, ...redacted } }
}
