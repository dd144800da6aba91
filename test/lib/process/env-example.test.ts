import { readFile } from 'node:fs/promises'
import t from 'tap'
import { loadConfig } from '../../../lib/process/config.js'

/** The variables of .env.example, commented out as it has them, with their values. */
const example = (await readFile('.env.example', 'utf8')).split('\n').flatMap(line => {
  const match = /^# ([A-Z][A-Z0-9_]*)=(.*)$/.exec(line)
  return match ? [[match[1]!, match[2]!] as const] : []
})
/** A configuration on a database server, where every database variable is read. */
const onServer = { DB_HOST: 'db.example.com', JWT_SECRET: 'a secret of at least thirty-two bytes' }

t.test('.env.example lists every variable the configuration reads, once', async t => {
  const read = new Set<string>()
  const recording = (env: Record<string, string>) => new Proxy(env, { get: (target, name: string) => { read.add(name); return target[name] } })
  loadConfig(recording({}))
  loadConfig(recording(onServer))
  loadConfig(recording({ OTEL_TRACES_EXPORTER: 'otlp' }))
  const listed = example.map(([name]) => name)
  t.same([...listed].sort(), [...read].sort())
  t.equal(new Set(listed).size, listed.length, 'none twice')
})

t.test('each value in .env.example is the default: uncommented, it changes nothing', async t => {
  const defaults = loadConfig(onServer, '/srv')
  for (const [name, value] of example) {
    if (name === 'DB_HOST' || name === 'JWT_SECRET') continue
    t.same(loadConfig({ ...onServer, [name]: value }, '/srv'), defaults, `${name}=${value}`)
  }
})
