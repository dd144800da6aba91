import { Type } from '@sinclair/typebox'
import t from 'tap'
import type pg from 'pg'
import { csvField, csvHeader, csvRowWriter } from '../../../lib/db/csv-row-writer.js'

const field = (name: string) => ({ name }) as pg.FieldDef

t.test('a CSV line: fields as the JSON shows them, quoted where they need it, a NULL empty', async t => {
  const schema = Type.Object({ id: Type.Integer(), note: Type.String(), at: Type.String({ format: 'date-time' }), day: Type.String({ format: 'date' }) })
  t.equal(csvHeader(schema), 'id,note,at,day\r\n')
  const write = csvRowWriter(schema, [field('day'), field('id'), field('at'), field('note')])
  t.equal(write(['2000-01-31', '7', '2026-11-22 09:30:00.5+00', 'plain']), '7,plain,2026-11-22T09:30:00.500Z,2000-01-31\r\n')
  t.equal(write([null, '7', null, null]), '7,,,\r\n')
  for (const [text, written] of [['a,b', '"a,b"'], ['say "hi"', '"say ""hi"""'], ['two\r\nlines', '"two\r\nlines"'], [' padded', '" padded"'], ['=1+1', '=1+1'], ['', '']]) {
    t.equal(csvField(text!), written, JSON.stringify(text))
  }
  t.throws(() => csvRowWriter(schema, [field('id')]), /no column note/)
})
