const QUOTE = 34
const BACKSLASH = 92
const COMMA = 44

/**
 * The fields of a row as PostgreSQL writes it as text (`row::text`, a composite's output):
 * `(1,"Ada Lovelace",,2026-11-22)` gives `['1', 'Ada Lovelace', null, '2026-11-22']`. Each
 * field is its value's own text, as the server sends it in a result, so that a row kept this
 * way is read back by the same row function as the row it was (lib/db/row-builder.ts).
 *
 * An unquoted empty field is NULL; a quoted one may hold any character, with `"` and `\`
 * written twice or after a `\`.
 */
export function recordFields (text: string): (string | null)[] {
  if (text.charCodeAt(0) !== 40 || text.charCodeAt(text.length - 1) !== 41) throw new Error('Not a row as PostgreSQL writes it')
  const end = text.length - 1
  const fields: (string | null)[] = []
  let at = 1
  for (;;) {
    if (text.charCodeAt(at) === QUOTE) {
      let value = ''
      at++
      for (;;) {
        const code = text.charCodeAt(at)
        if (at >= end) throw new Error('A row\'s quoted field is not closed')
        if (code === BACKSLASH || (code === QUOTE && text.charCodeAt(at + 1) === QUOTE)) {
          value += text[at + 1]
          at += 2
        } else if (code === QUOTE) {
          at++
          break
        } else {
          value += text[at]
          at++
        }
      }
      fields.push(value)
    } else {
      let next = text.indexOf(',', at)
      if (next < 0 || next > end) next = end
      fields.push(next === at ? null : text.slice(at, next))
      at = next
    }
    if (at >= end) return fields
    if (text.charCodeAt(at) !== COMMA) throw new Error('A row\'s field is followed by neither a comma nor its end')
    at++
  }
}
