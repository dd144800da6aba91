import t from 'tap'
import { LastUse } from '../../../lib/auth/last-use.js'

/** A LastUse whose writes are counted by id. */
function counted (capacity: number) {
  const writes: number[] = []
  const lastUse = new LastUse(capacity, async id => { writes.push(id) })
  return { lastUse, writes }
}

const MINUTE = 60_000

t.test('a use is written once a minute per id; past the capacity the oldest id is forgotten and written again', async t => {
  const { lastUse, writes } = counted(2)
  const start = 1_000_000
  await lastUse.note(1, start)
  t.equal(lastUse.note(1, start + 1_000), undefined, 'not again within the minute')
  await lastUse.note(1, start + MINUTE)
  t.same(writes, [1, 1], 'again a minute later')
  await lastUse.note(2, start + MINUTE)
  await lastUse.note(3, start + MINUTE)
  t.equal(lastUse.note(3, start + MINUTE + 1), undefined, 'the newest is remembered')
  await lastUse.note(1, start + MINUTE + 2)
  t.same(writes, [1, 1, 2, 3, 1], 'the oldest, 1, was forgotten: written again early')
})

t.test('an id written again goes to the back: the next forgotten is the one written longest ago', async t => {
  const { lastUse, writes } = counted(2)
  await lastUse.note(1, 0)
  await lastUse.note(2, 1)
  await lastUse.note(1, MINUTE)
  await lastUse.note(3, MINUTE)
  t.equal(lastUse.note(1, MINUTE + 1), undefined, '1, written last a minute after 2, is remembered')
  await lastUse.note(2, MINUTE + 1)
  t.same(writes, [1, 2, 1, 3, 2], '2 was forgotten')
})

t.test('AUTH_CACHE_SIZE=0: nothing is remembered, every use is written', async t => {
  const { lastUse, writes } = counted(0)
  for (let i = 0; i < 3; i++) await lastUse.note(7, i)
  t.same(writes, [7, 7, 7])
})
