import t from 'tap'
import { settledPositions } from '../../../lib/db/settled-position.js'
import { createDatabase, testPool } from '../../helper.js'

t.test('callers that ask while a measurement waits share the next one; a failed one does not stop the next', async t => {
  const config = await createDatabase(t)
  const pool = testPool(config)
  t.teardown(() => pool.end())
  const settled = settledPositions(pool)

  await t.rejects(settled(), /change_positions/, 'no sequence yet: the measurement fails')
  await pool.query('create sequence change_positions')
  t.equal(await settled(), 0, 'nothing drawn yet')

  // A transaction that drew 1 and is still in flight: a measurement waits for it.
  const writer = await pool.connect()
  t.teardown(() => writer.release())
  await writer.query('begin')
  await writer.query('select pg_current_xact_id(), nextval(\'change_positions\')')
  const first = settled()
  const second = settled()
  const third = settled()
  t.equal(second, third, 'two callers while the first measurement is under way share the one after it')
  let done = false
  void Promise.all([first, second]).then(() => { done = true })
  await new Promise(resolve => setTimeout(resolve, 100))
  t.notOk(done, 'both wait for the transaction that drew')
  await writer.query('commit')
  t.same(await Promise.all([first, second, third]), [1, 1, 1])
})
