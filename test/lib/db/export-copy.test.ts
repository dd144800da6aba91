import { text } from 'node:stream/consumers'
import t from 'tap'
import { createDatabase, testPool } from '../../helper.js'
import { copyExport } from '../../../lib/db/export-copy.js'

// Three rows, 200 ms each: longer than the pool's statement timeout.
const SLOW = 'select n, pg_sleep(0.2) as slept from generate_series(1, 3) n'

t.test('an export has a time limit of its own in place of the pool\'s statement timeout, and gives its connection back as it found it', async t => {
  const db = await createDatabase(t)
  // One connection, each of whose statements has 200 ms.
  const pool = testPool({ ...db, max: 1, statement_timeout: 200 })
  t.teardown(() => pool.end())
  const rows = await text(await copyExport(pool, SLOW, [], 'csv', 10_000))
  t.equal(rows, 'n,slept\n1,""\n2,""\n3,""\n', 'every row, past the statement timeout')

  const { rows: [connection] } = await pool.query<{ limit: string, fresh: boolean }>(
    "select current_setting('statement_timeout') as limit, xact_start = query_start as fresh from pg_stat_activity where pid = pg_backend_pid()")
  t.same(connection, { limit: '200ms', fresh: true }, 'the pool\'s limit again, no transaction left open')

  await t.rejects(text(await copyExport(pool, SLOW, [], 'csv', 300)), { code: '57014' }, 'cut at its own limit')
  t.equal((await pool.query<{ one: number }>('select 1 as one')).rows[0]!.one, 1, 'the pool serves on')
})
