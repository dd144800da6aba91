import t from 'tap'
import { knexLog } from '../../../lib/db/knex-config.js'

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
