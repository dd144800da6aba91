import t from 'tap'
import { build, lockWaiters } from '../../helper.js'
import { student } from './fixtures.js'

const NDJSON = { 'content-type': 'application/x-ndjson' }

t.test('BULK_CONCURRENCY: an import or export past the instance\'s slots gets 503 with Retry-After; a slot ended is free again', async t => {
  const app = await build(t, { bulkConcurrency: 1 })
  // An import held up: its INSERT waits on an address a transaction left open has taken.
  const trx = await app.knex.transaction()
  await trx('students').insert(student(2))
  const importing = app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: JSON.stringify(student(2)) })
  t.ok(await lockWaiters(app, 1))
  const exported = await app.inject({ url: '/students', headers: { accept: 'text/csv' } })
  t.equal(exported.statusCode, 503)
  t.match(exported.headers['retry-after'], /^\d+$/)
  t.match(exported.json(), { code: 'unavailable', message: /The 1 imports and exports this instance runs at once \(BULK_CONCURRENCY\) are under way/ })
  const another = await app.inject({ method: 'POST', url: '/students/import', headers: NDJSON, payload: JSON.stringify(student(3)) })
  t.match(another.json(), { statusCode: 503, code: 'unavailable' })
  t.equal((await app.inject({ url: '/students' })).statusCode, 200, 'a JSON page takes no slot')
  await trx.commit()
  t.match((await importing).json(), { statusCode: 409 })
  const after = await app.inject({ url: '/students', headers: { accept: 'text/csv' } })
  t.equal(after.statusCode, 200, 'the import\'s slot is free again')
  t.equal((await app.inject({ url: '/students', headers: { accept: 'text/csv' } })).statusCode, 200, 'and the export\'s, once it has been read')
})
