import path from 'node:path'
import t from 'tap'
import { ConfigError, loadConfig } from '../../lib/config.js'

t.test('defaults', async t => {
  const config = loadConfig({})
  t.same(config, {
    port: 3000,
    host: 'localhost',
    logLevel: 'info',
    dataDir: path.resolve('.data'),
    db: null,
    dbPoolMax: 10
  })
})

t.test('DB_HOST switches to that server, with the other DB_ settings', async t => {
  t.same(loadConfig({ DB_HOST: 'db.internal' }).db, { host: 'db.internal', port: 5432, database: 'postgres', user: 'postgres', password: '' })
  t.same(loadConfig({
    DB_HOST: 'db', DB_PORT: '6543', DB_NAME: 'school', DB_USER: 'app', DB_PASSWORD: ' secret '
  }).db, { host: 'db', port: 6543, database: 'school', user: 'app', password: ' secret ' })
})

t.test('a bad value stops start-up with a message naming the variable', async t => {
  const cases: [Record<string, string>, RegExp][] = [
    [{ PORT: 'abc' }, /^PORT must be a whole number from 0 to 65535, got "abc"$/],
    [{ PORT: '70000' }, /^PORT /],
    [{ PORT: '-1' }, /^PORT /],
    [{ DB_HOST: 'db', DB_PORT: '0' }, /^DB_PORT /],
    [{ DB_POOL_MAX: '0' }, /^DB_POOL_MAX /],
    [{ LOG_LEVEL: 'loud' }, /^LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"$/]
  ]
  for (const [env, message] of cases) {
    t.throws(() => loadConfig(env), { name: 'ConfigError', message }, JSON.stringify(env))
  }
  t.type(new ConfigError('x'), Error)
})
