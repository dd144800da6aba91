import t from 'tap'
import { knexConfig, knexLog, startupKnexConfig, STARTUP_CONNECT_MS } from '../../../lib/db/knex-config.js'
import { testConfig } from '../../helper.js'

t.test('knex\'s messages go to the logger at their level, marked as knex\'s', async t => {
  const lines: [string, object, string][] = []
  const logger = {
    warn: (fields: object, message: string) => { lines.push(['warn', fields, message]) },
    error: (fields: object, message: string) => { lines.push(['error', fields, message]) },
    debug: (fields: object, message: string) => { lines.push(['debug', fields, message]) }
  }
  const log = knexLog(logger)
  log.warn!('Connection Error: Connection ended unexpectedly')
  log.error!('an error')
  log.deprecate!('a method is deprecated, please use another', '')
  log.debug!({ sql: 'select 1' })
  t.same(lines, [
    ['warn', { source: 'knex' }, 'Connection Error: Connection ended unexpectedly'],
    ['error', { source: 'knex' }, 'an error'],
    ['warn', { source: 'knex' }, 'a method is deprecated, please use another'],
    ['debug', { source: 'knex' }, "{ sql: 'select 1' }"]
  ])
})

t.test('start-up\'s connections wait longer to connect and hold no statement limit; through a pooler they send none', async t => {
  const base = testConfig({ host: '127.0.0.1', port: 5432, user: 'postgres', password: '', database: 'postgres' })
  const direct = startupKnexConfig(knexConfig(base)).connection as { statement_timeout?: number, connectionTimeoutMillis: number }
  t.equal(direct.statement_timeout, 0, 'a migration or the wait for another instance\'s is not cut at DB_STATEMENT_TIMEOUT')
  t.equal(direct.connectionTimeoutMillis, STARTUP_CONNECT_MS)
  const pooled = startupKnexConfig(knexConfig({ ...base, dbPooler: 'transaction' })).connection as object
  t.notOk('statement_timeout' in pooled, 'a pooler would refuse the setting')
})
