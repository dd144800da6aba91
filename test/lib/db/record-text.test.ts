import t from 'tap'
import pg from 'pg'
import { recordFields } from '../../../lib/db/record-text.js'
import { createDatabase } from '../../helper.js'

t.test('a row written as text by PostgreSQL gives back each field\'s own text, NULL as null', async t => {
  const client = new pg.Client(await createDatabase(t))
  await client.connect()
  t.teardown(() => client.end())
  const values = ['plain', '', 'a,b', 'say "hi"', 'back\\slash', '(parens)', ' spaced ', 'tab\tand\nnewline', 'é😀', '""', '\\"', ',', ')']
  for (const fields of [values, [null, 'x', null], [null], ['only'], ['', null, '']]) {
    const placeholders = fields.map((_, i) => `$${i + 1}::text`).join(', ')
    // row() of one field needs the ROW keyword to be a row, not a parenthesized value.
    const { rows: [{ text }] } = await client.query<{ text: string }>(`select row(${placeholders})::text as text`, fields)
    t.same(recordFields(text), fields, text)
  }
  const { rows: [typed] } = await client.query<{ text: string }>("select row(42, date '1815-12-10', timestamptz '2026-11-22 09:30:00.123456+00', true, '{\"a\": [1, \"x,y\"]}'::jsonb)::text as text")
  t.same(recordFields(typed!.text).slice(0, 2), ['42', '1815-12-10'], 'numbers and dates as the server writes them')
  t.same(JSON.parse(recordFields(typed!.text)[4]!), { a: [1, 'x,y'] }, 'json with quotes and commas')
})

t.test('text that is not a row written by PostgreSQL is refused', async t => {
  for (const bad of ['', 'x', '(unclosed', '("open)', '("a"b)']) {
    t.throws(() => recordFields(bad), Error, JSON.stringify(bad))
  }
})
