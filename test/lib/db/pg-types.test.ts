import t from 'tap'
import fc from 'fast-check'
import pg from 'pg'
import { isoTimestamp, SESSION_OPTIONS, types } from '../../../lib/db/pg-types.js'
import { createDatabase } from '../../helper.js'

const viaDate = (text: string) => (pg.types.getTypeParser(pg.types.builtins.TIMESTAMPTZ)(text) as Date).toISOString()
const pad = (n: number, width = 2) => String(n).padStart(width, '0')

t.test('a UTC timestamp as PostgreSQL writes it: the same string a Date gives', async t => {
  t.equal(isoTimestamp('2026-11-22 09:30:00.123456+00'), '2026-11-22T09:30:00.123Z')
  t.equal(isoTimestamp('2026-11-22 09:30:00.5+00'), '2026-11-22T09:30:00.500Z', 'fraction padded')
  t.equal(isoTimestamp('2026-11-22 09:30:00+00'), '2026-11-22T09:30:00.000Z', 'no fraction')
  t.equal(isoTimestamp('2026-11-22 09:30:00.999999+00'), '2026-11-22T09:30:00.999Z', 'cut, not rounded, as a Date cuts')

  // PostgreSQL drops the fraction's trailing zeros, and leaves it out when it is zero.
  const written = fc.record({
    year: fc.integer({ min: 100, max: 9999 }),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.integer({ min: 1, max: 28 }),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    micro: fc.integer({ min: 0, max: 999_999 })
  }).map(({ year, month, day, hour, minute, second, micro }) =>
    `${pad(year, 4)}-${pad(month)}-${pad(day)} ${pad(hour)}:${pad(minute)}:${pad(second)}` +
    `${micro === 0 ? '' : '.' + pad(micro, 6).replace(/0+$/, '')}+00`)
  fc.assert(fc.property(written, text => isoTimestamp(text) === viaDate(text)))
})

t.test('any other form goes through a Date', async t => {
  t.equal(isoTimestamp('2026-11-22 15:00:00.25+05:30'), '2026-11-22T09:30:00.250Z', 'another offset')
  t.equal(isoTimestamp('2026-11-22 09:30:00+01'), '2026-11-22T08:30:00.000Z', 'another whole-hour offset')
  t.equal(isoTimestamp('0044-03-15 12:00:00+00 BC'), viaDate('0044-03-15 12:00:00+00 BC'), 'BC')
  t.equal(isoTimestamp('10000-01-01 00:00:00+00'), '+010000-01-01T00:00:00.000Z', 'a five-digit year')
})

t.test('on a real connection: UTC and ISO whatever the database says, and the instants PostgreSQL holds', async t => {
  const connection = await createDatabase(t)
  const admin = new pg.Client(connection)
  await admin.connect()
  await admin.query(`alter database ${connection.database} set timezone to 'Asia/Kolkata'`)
  await admin.query(`alter database ${connection.database} set datestyle to 'German'`)
  await admin.end()

  const client = new pg.Client({ ...connection, options: SESSION_OPTIONS, types })
  await client.connect()
  t.teardown(() => client.end())
  const settings = await client.query<{ timezone: string, datestyle: string }>('select current_setting(\'TimeZone\') as timezone, current_setting(\'DateStyle\') as datestyle')
  t.equal(settings.rows[0]!.timezone, 'UTC', 'the session options win over the database defaults')
  t.match(settings.rows[0]!.datestyle, /^ISO,/, 'ISO output (the order part only reads ambiguous input)')
  const { rows: [date] } = await client.query<{ dob: string }>('select date \'1815-12-10\' as dob')
  t.equal(date!.dob, '1815-12-10', 'dates as YYYY-MM-DD')

  const instants = ['2026-11-22 09:30:00.123456+00', '1815-12-10 23:59:59.999+00', '2000-02-29 00:00:00+00', '0044-03-15 12:00:00+00 BC', '12345-06-07 08:09:10.5+00']
  for (const zone of ['UTC', 'Asia/Kolkata', 'America/St_Johns', 'Pacific/Kiritimati']) {
    await client.query(`set timezone to '${zone}'`)
    const { rows } = await client.query<{ at: string, ms: string }>(
      'select at, floor(extract(epoch from at) * 1000)::text as ms from unnest($1::timestamptz[]) as at', [instants])
    t.same(rows.map(row => row.at), rows.map(row => new Date(Number(row.ms)).toISOString()), `the same instants in ${zone}`)
  }
})
