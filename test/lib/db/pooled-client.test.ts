import t from 'tap'
import pg from 'pg'
import { buildApp, createDatabase, testConfig } from '../../helper.js'

// DB_POOLER=transaction, straight against PostgreSQL: what the service sends is what a
// transaction-mode pooler lets through (test/server/pgbouncer.test.ts runs it behind PgBouncer).

const student = { name: 'Pooled', email: 'pooled@example.com', age: 30, dob: '1996-02-29' }

t.test('DB_POOLER=transaction: statements go unnamed, and the session settings hold without startup options', async t => {
  const db = await createDatabase(t)
  // A database whose own settings would garble dates and time stamps.
  const admin = new pg.Client(db)
  await admin.connect()
  await admin.query(`alter database ${db.database} set timezone to 'Pacific/Kiritimati'`)
  await admin.query(`alter database ${db.database} set datestyle to 'SQL, DMY'`)
  await admin.end()

  for (const dbPooler of ['transaction', 'none'] as const) {
    // One connection: the one the checks below look at is the one that served.
    const app = await buildApp(t, testConfig(db, { dbPooler, dbPoolMax: 1 }))
    const created = await app.inject({ method: 'POST', url: '/students', payload: { ...student, email: `${dbPooler}@example.com` } })
    t.equal(created.statusCode, 201)
    const read = await app.inject({ url: `/students/${created.json().id}` })
    t.equal(read.json().dob, student.dob, `${dbPooler}: the date as written`)
    t.match(read.json().created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, `${dbPooler}: time stamps in UTC`)
    const changed = await app.inject({ method: 'PATCH', url: `/students/${created.json().id}`, payload: { age: 31 } })
    t.equal(changed.json().age, 31, `${dbPooler}: a change in a transaction`)

    const prepared = async (query: () => Promise<{ rows: { count: number }[] }>) => (await query()).rows[0]!.count
    const onPool = await prepared(() => app.pgPool.query('select count(*)::int as count from pg_prepared_statements'))
    const onKnex = await prepared(() => app.knex.raw('select count(*)::int as count from pg_prepared_statements'))
    if (dbPooler === 'transaction') {
      t.equal(onPool + onKnex, 0, 'no named statement is left on a server connection')
    } else {
      t.ok(onPool > 0, 'without a pooler, the hot paths keep their named statements')
    }
    const settings = await app.knex.raw<{ rows: { timezone: string, datestyle: string }[] }>('select current_setting(\'TimeZone\') as timezone, current_setting(\'DateStyle\') as datestyle')
    t.match(settings.rows[0], { timezone: 'UTC', datestyle: /^ISO,/ }, `${dbPooler}: the session's settings are the service's`)
    const timeout = await app.knex.raw<{ rows: { statement_timeout: string }[] }>('show statement_timeout')
    t.equal(timeout.rows[0]!.statement_timeout, dbPooler === 'transaction' ? '0' : '10s', `${dbPooler}: the statement limit is ${dbPooler === 'transaction' ? 'left to the pooler or the role' : 'the service\'s'}`)
    await app.close()
  }
})
