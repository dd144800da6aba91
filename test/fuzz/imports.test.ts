import t from 'tap'
import fc from 'fast-check'
import { build } from '../helper.js'
import { badValue, body, valid, type Schema } from './arbitraries.js'
import { fuzzRuns } from './runs.js'

const FIELDS = ['name', 'email', 'age', 'dob']

/** A CSV field as a writer might put it: bare when it can be, else quoted, or quoted anyway. */
const csvField = (value: unknown, quoteAnyway: boolean) => {
  const text = value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value)
  return quoteAnyway || /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

t.test('imports of fuzzed files: 200 or a documented 4xx, never 5xx; the rows written are those the answer counts, and a refused import writes none', async t => {
  const app = await build(t)
  const document = (await app.inject({ url: '/documentation/json' })).json()
  const components: Record<string, Schema> = document.components.schemas
  const input = components.StudentInput!
  // Rows: valid ones (their addresses drawn from few, so that some repeat or are held), broken
  // ones, and anything else; then the file's form around them.
  const address = fc.constantFrom(...Array.from({ length: 8 }, (_, i) => `fuzz${i}@example.com`))
  const row = fc.oneof(
    { weight: 3, arbitrary: fc.tuple(valid(input, components) as fc.Arbitrary<Record<string, unknown>>, address).map(([record, email]) => ({ ...record, email })) },
    { weight: 1, arbitrary: body(input, components) },
    { weight: 1, arbitrary: fc.record({ name: badValue, email: address, age: fc.constantFrom(' 7', '1e1', '-1', 151), dob: fc.constantFrom('2001-02-30', '2999-01-01', '') }) }
  )
  const file = fc.record({
    format: fc.constantFrom('csv', 'ndjson'),
    rows: fc.array(row, { maxLength: 12 }),
    header: fc.shuffledSubarray(FIELDS, { minLength: 3, maxLength: 4 }).chain(fields => fc.oneof(
      { weight: 6, arbitrary: fc.constant<string[]>(fields) },
      { weight: 1, arbitrary: fc.constant<string[]>([...fields, 'extra']) }
    )),
    lineEnd: fc.constantFrom('\n', '\r\n'),
    bom: fc.boolean(),
    quoteAnyway: fc.boolean(),
    blankLines: fc.boolean(),
    // A stream cut off: the file ends anywhere, mid-row included.
    cut: fc.option(fc.nat(), { nil: undefined }),
    // A line that is not a record at all, somewhere.
    junk: fc.option(fc.tuple(fc.nat(), fc.constantFrom('"unclosed,quote', '{"name":', 'x'.repeat(70_000), ',,,,,,,', '\u0000')), { nil: undefined }),
    onConflict: fc.constantFrom(undefined, 'error', 'skip', 'update')
  })

  const counts = async () => Promise.all(['students', 'change_outbox', 'audit_log'].map(async table => Number((await app.knex(table).count({ n: '*' }))[0]!.n)))
  const seen = new Map<number, number>()
  await fc.assert(fc.asyncProperty(file, async ({ format, rows, header, lineEnd, bom, quoteAnyway, blankLines, cut, junk, onConflict }) => {
    let lines = format === 'csv'
      ? [header.join(','), ...rows.map(record => header.map(field => csvField((record as Record<string, unknown> | null)?.[field], quoteAnyway)).join(','))]
      : rows.map(record => JSON.stringify(record))
    if (junk !== undefined) lines.splice(junk[0] % (lines.length + 1), 0, junk[1])
    if (blankLines) lines = lines.flatMap(line => [line, ''])
    let text = (bom ? '\uFEFF' : '') + lines.join(lineEnd)
    if (cut !== undefined) text = text.slice(0, cut % (text.length + 1))
    const before = await counts()
    const res = await app.inject({
      method: 'POST',
      url: `/students/import${onConflict === undefined ? '' : `?on_conflict=${onConflict}`}`,
      headers: { 'content-type': format === 'csv' ? 'text/csv' : 'application/x-ndjson' },
      payload: text
    })
    seen.set(res.statusCode, (seen.get(res.statusCode) ?? 0) + 1)
    const answer = res.json()
    const [students, events, entries] = await counts()
    const written = [students! - before[0]!, events! - before[1]!, entries! - before[2]!]
    if (res.statusCode === 200) {
      const { inserted, updated } = answer as { inserted: number, updated: number }
      if (written[0] !== inserted || written[1] !== inserted + updated || written[2] !== inserted + updated) {
        throw new Error(`answered ${res.body} but wrote ${JSON.stringify(written)}`)
      }
      if ((onConflict ?? 'error') === 'error' && answer.failed !== 0) throw new Error(`an atomic import answered 200 with rows refused: ${res.body}`)
    } else {
      if (![400, 409, 422].includes(res.statusCode)) throw new Error(`${res.statusCode} ${res.body}`)
      if (answer.success !== false || answer.statusCode !== res.statusCode) throw new Error(`not the error body: ${res.body}`)
      if (written.some(n => n !== 0)) throw new Error(`answered ${res.statusCode} but wrote ${JSON.stringify(written)}`)
    }
  }), { numRuns: fuzzRuns(200) })
  t.comment(`statuses: ${JSON.stringify([...seen].sort())}`)
  t.ok(seen.has(200) && seen.has(422), 'some imported, some refused')
})
