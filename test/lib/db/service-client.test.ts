import { once } from 'node:events'
import { readFile } from 'node:fs/promises'
import pg from 'pg'
import t from 'tap'
import { databaseBusy, databaseUnavailable, endsSession } from '../../../lib/db/db-errors.js'
import { ServiceClient, ServicePool } from '../../../lib/db/service-client.js'
import { Statement } from '../../../lib/db/statement-query.js'
import { createDatabase } from '../../helper.js'
import { freePort } from '../../server/process.js'

t.test('errors are told by their code and class, not their text', async t => {
  const missingFile = await readFile('/nonexistent/file').catch((error: unknown) => error)
  t.notOk(databaseUnavailable(missingFile), 'a missing file is no database\'s doing')
  t.ok(databaseUnavailable(Object.assign(new Error('connect ENOENT /run/.s.PGSQL.5432'), { code: 'ENOENT', syscall: 'connect', address: '/run/.s.PGSQL.5432' })), 'a Unix socket that is gone is')
  for (const code of ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', '08006', '53300', '53200', '57P01', '57P03']) {
    t.ok(databaseUnavailable(Object.assign(new Error('any text'), { code })), code)
  }
  for (const error of [new Error('Connection terminated unexpectedly'), new Error('timeout exceeded when trying to connect'), Object.assign(new Error('x'), { code: '23505' }), 'a string', null]) {
    t.notOk(databaseUnavailable(error), `not by its text: ${String(error)}`)
  }
  for (const code of ['57014', '55P03', '40001', '40P01', '25P03']) t.ok(databaseBusy(Object.assign(new Error('x'), { code })), `busy: ${code}`)
  t.notOk(databaseBusy(new Error('canceling statement due to statement timeout')), 'not by its text')
  for (const code of ['57P01', '57P02', '57P03', '57P05', '25P03']) t.ok(endsSession(Object.assign(new Error('x'), { code, severity: 'FATAL' })), `ends the session: ${code}`)
  for (const severity of ['FATAL', 'PANIC']) t.ok(endsSession(Object.assign(new Error('x'), { code: 'XX000', severity })), `ends the session: any ${severity}`)
  t.notOk(endsSession(Object.assign(new Error('x'), { code: '57014', severity: 'ERROR' })), 'a statement timeout does not')
})

t.test('a client whose connection is lost: its error and every later query\'s, in each of pg\'s forms, are the database\'s', async t => {
  const connection = await createDatabase(t)
  const client = new ServiceClient(connection)
  await client.connect()
  t.teardown(() => client.end().catch(() => {}))
  t.same((await client.query('select 1 as one')).rows, [{ one: 1 }], 'a query before')
  const lost = once(client, 'error')
  const admin = new pg.Client(connection)
  await admin.connect()
  await admin.query('select pg_terminate_backend($1)', [(client as unknown as { processID: number }).processID])
  await admin.end()
  const [error] = await lost
  t.ok(databaseUnavailable(error), `the connection's error: ${String(error)}`)

  const promised = await client.query('select 1').catch((error: unknown) => error)
  t.ok(databaseUnavailable(promised), `a promise's: ${String(promised)}`)
  const calledBack = await new Promise<Error>(resolve => client.query('select 1', (error: Error) => resolve(error)))
  t.ok(databaseUnavailable(calledBack), 'a callback\'s')
  const withValues = await new Promise<Error>(resolve => client.query('select $1::int', [1], (error: Error) => resolve(error)))
  t.ok(databaseUnavailable(withValues), 'a callback\'s, with values')
  const submitted = await new Statement('one', 'select 1 as one').run(client, []).catch((error: unknown) => error)
  t.ok(databaseUnavailable(submitted), 'a prepared statement\'s')
})

t.test('a connect that fails, and a pool that lends no connection in time, are the database\'s', async t => {
  const nobody = { host: '127.0.0.1', port: await freePort(), user: 'postgres', database: 'postgres' }
  const refused = await new ServiceClient(nobody).connect().catch((error: unknown) => error)
  t.ok(databaseUnavailable(refused), 'refused, as a promise')
  const calledBack = await new Promise<Error | null>(resolve => new ServiceClient(nobody).connect(resolve))
  t.ok(databaseUnavailable(calledBack), 'refused, called back')
  const connecting = new ServiceClient(await createDatabase(t))
  const connected = await new Promise<unknown[]>(resolve => connecting.connect((...args: unknown[]) => resolve(args)))
  t.teardown(() => connecting.end())
  t.equal(connected[0], null, 'connected, called back with no error')
  t.equal(connected[1], connecting, 'and with the client, as pg does')

  // Long enough that the held connection itself opens in time on a busy machine.
  const pool = new ServicePool({ ...await createDatabase(t), max: 1, connectionTimeoutMillis: 1500, Client: ServiceClient })
  t.teardown(() => pool.end())
  const held = await pool.connect()
  const waited = await pool.connect().catch((error: unknown) => error)
  t.ok(databaseUnavailable(waited), `no free connection in time, as a promise: ${String(waited)}`)
  const queried = await pool.query('select 1').catch((error: unknown) => error)
  t.ok(databaseUnavailable(queried), 'and through pool.query, which is called back')
  held.release()
  t.same((await pool.query('select 1 as one')).rows, [{ one: 1 }], 'lent once free')
})
