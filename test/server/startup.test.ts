import { once } from 'node:events'
import readline from 'node:readline'
import t from 'tap'
import { databaseEnv, spawnServer } from './process.js'

t.test('a bad configuration stops start-up with a message naming the variable', async t => {
  const child = spawnServer({ ...process.env, PORT: 'eighty' }, 'pipe')
  let stderr = ''
  child.stderr!.on('data', chunk => { stderr += chunk })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, 'Invalid configuration: PORT must be a whole number from 0 to 65535, got "eighty"')
})

t.test('start-up fails cleanly when the database cannot be reached', async t => {
  const child = spawnServer({ ...await databaseEnv(t), DB_HOST: '127.0.0.1', DB_PORT: '1', LOG_LEVEL: 'info' })
  const lines: string[] = []
  readline.createInterface({ input: child.stdout! }).on('line', line => lines.push(line))
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(lines.join('\n'), '"msg":"could not start"')
})
