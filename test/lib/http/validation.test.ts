import t from 'tap'
import { invalidRows, latestToday } from '../../../lib/http/validation.js'

t.test('latestToday: the date in UTC+14, which moves on at 10:00 UTC, whichever way time goes', async t => {
  const at = (iso: string) => latestToday(Date.parse(iso))
  t.equal(at('2026-11-21T09:59:59.999Z'), '2026-11-21', 'just before midnight in UTC+14')
  t.equal(at('2026-11-21T10:00:00.000Z'), '2026-11-22', 'midnight in UTC+14')
  t.equal(at('2026-11-22T09:59:59.999Z'), '2026-11-22', 'the same day, worked out once')
  t.equal(at('2026-11-22T10:00:00.000Z'), '2026-11-23', 'the next day')
  t.equal(at('2026-11-21T09:00:00.000Z'), '2026-11-21', 'a clock set back')
  t.equal(at('2024-02-28T10:00:00.000Z'), '2024-02-29', 'a leap day')
  t.equal(latestToday(), new Date(Date.now() + 14 * 3600_000).toISOString().slice(0, 10), 'now, by default')
})

t.test('invalidRows knows only a batch\'s body as its schema checked it: a copy of one throws, never reads as all valid', async t => {
  t.throws(() => invalidRows([{ email: 'not checked' }]), /Not a batch's body/)
})
