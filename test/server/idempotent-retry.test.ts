import t from 'tap'
import pg from 'pg'
import { createDatabase, TEST_JWT_SECRET, within } from '../helper.js'
import { databaseProxy } from '../faults/database-proxy.js'
import type { DatabaseConfig } from '../../lib/process/config.js'
import { startServer } from './process.js'

const environment = (db: DatabaseConfig): NodeJS.ProcessEnv => ({
  ...process.env, JWT_SECRET: TEST_JWT_SECRET, DB_HOST: db.host, DB_PORT: String(db.port), DB_NAME: db.database, DB_USER: db.user, DB_PASSWORD: db.password
})

t.test('a process killed between a keyed POST\'s commit and its answer: the retry on a new process gets the stored answer, and there is one record', async t => {
  const db = await createDatabase(t)
  const proxy = await databaseProxy(t, db)
  const first = await startServer(environment(proxy.db))
  t.teardown(() => first.kill())
  const direct = new pg.Client(db)
  await direct.connect()
  t.teardown(() => direct.end())
  const students = async () => (await direct.query<{ id: number }>('select id from students')).rows

  const request = {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'order-66' },
    body: JSON.stringify({ name: 'Ada Lovelace', email: 'ada@example.com', age: 36, dob: '1815-12-10' })
  }
  // The keyed INSERT is one statement, which keeps the key: its reply is the commit's.
  proxy.stallRepliesAfter('idempotency_keys')
  const lost = fetch(`${first.url}/students`, request).then(res => res.status, () => 'no answer')
  t.ok(await within(10_000, async () => (await students()).length === 1), 'the create committed')
  first.kill()
  t.equal(await lost, 'no answer', 'the client never heard')

  const second = await startServer(environment(db))
  t.teardown(() => second.kill())
  const retried = await fetch(`${second.url}/students`, request)
  t.equal(retried.status, 201, 'the retry is answered 201')
  t.equal(retried.headers.get('idempotent-replayed'), 'true', 'from the stored answer')
  const [record] = await students()
  t.match(await retried.json(), { id: record!.id, email: 'ada@example.com' }, 'naming the record that was created')
  t.equal(retried.headers.get('location'), `/students/${record!.id}`)
  t.equal((await students()).length, 1, 'one record')
})
