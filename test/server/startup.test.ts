import { once } from 'node:events'
import readline from 'node:readline'
import t from 'tap'
import { within } from '../helper.js'
import { databaseEnv, spawnServer, startServer } from './process.js'

t.test('a bad configuration stops start-up with a message naming the variable', async t => {
  const cases: [Record<string, string>, string][] = [
    [{ PORT: 'eighty' }, 'Invalid configuration: PORT must be a whole number from 0 to 65535, got "eighty"'],
    // Set to blanks: never silently the default.
    [{ PORT: ' ' }, 'Invalid configuration: PORT is blank']
  ]
  for (const [env, message] of cases) {
    const child = spawnServer({ ...process.env, ...env }, 'pipe')
    let stderr = ''
    child.stderr!.on('data', chunk => { stderr += chunk })
    const [code] = await once(child, 'exit')
    t.equal(code, 1)
    t.match(stderr, message)
  }
})

t.test('start-up fails cleanly when the database cannot be reached', async t => {
  const child = spawnServer({ ...await databaseEnv(t), DB_HOST: '127.0.0.1', DB_PORT: '1', LOG_LEVEL: 'info' })
  const lines: string[] = []
  readline.createInterface({ input: child.stdout! }).on('line', line => lines.push(line))
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(lines.join('\n'), '"msg":"could not start"')
})

t.test('start-up says where the service and its documentation are', async t => {
  const server = await startServer(await databaseEnv(t))
  t.teardown(() => server.kill())
  const serving = () => server.logs.find(entry => typeof entry.msg === 'string' && entry.msg.startsWith('serving at'))
  t.ok(await within(5_000, () => serving() !== undefined), 'right after listening')
  const line = serving()
  t.match(line, { url: server.url, documentation: `${server.url}/documentation`, msg: `serving at ${server.url}; the API documentation is at ${server.url}/documentation` })
  t.equal((await fetch(line!.documentation as string)).status, 200, 'and the documentation is there')
  const metrics = server.logs.find(entry => typeof entry.metrics === 'string')
  t.match(metrics, { msg: /^serving the metrics at http:\/\/127\.0\.0\.1:\d+\/metrics$/ }, 'and where the metrics are')
  t.equal((await fetch(metrics!.metrics as string)).status, 200, 'which are there')
  t.equal((await fetch(`${server.url}/metrics`)).status, 404, 'and not on the API\'s port')
})
