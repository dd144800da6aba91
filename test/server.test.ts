import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import t from 'tap'
import { ada } from './routes/students/fixtures.js'

interface Server { process: ChildProcess, url: string, logs: Record<string, unknown>[] }

/** Starts server.ts as `npm start` would, on its own embedded PostgreSQL in `dataDir`. */
async function startServer (dataDir: string): Promise<Server> {
  const env: Record<string, string | undefined> = { ...process.env, DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }
  delete env.DB_HOST
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], { env, stdio: ['ignore', 'pipe', 'inherit'] })
  const logs: Record<string, unknown>[] = []
  const lines = readline.createInterface({ input: child.stdout! })
  const url = await new Promise<string>((resolve, reject) => {
    child.once('exit', code => reject(new Error(`server exited with ${code}`)))
    lines.on('line', line => {
      const entry = JSON.parse(line)
      logs.push(entry)
      const match = /^Server listening at (http:\/\/127\.0\.0\.1:\d+)$/.exec(entry.msg)
      if (match) resolve(match[1]!)
    })
  })
  return { process: child, url, logs }
}

/** A POST whose body arrives in two parts, `pause` ms apart: a request in flight. */
function slowPost (url: string, body: string, pause: () => Promise<void>) {
  return new Promise<{ status: number, body: string }>((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, res => {
      let text = ''
      res.on('data', chunk => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, body: text }))
    })
    req.on('error', reject)
    req.write(body.slice(0, 10))
    pause().then(() => req.end(body.slice(10)), reject)
  })
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

t.test('npm start: embedded PostgreSQL, graceful SIGTERM, data kept across restarts', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'students-server-'))
  await chmod(dataDir, 0o755)
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))

  const first = await startServer(dataDir)
  t.teardown(() => first.process.kill('SIGKILL'))
  const created = await fetch(`${first.url}/students`, {
    method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(ada)
  })
  t.equal(created.status, 201)
  const student = await created.json() as { id: number }

  const exited = once(first.process, 'exit')
  const inFlight = slowPost(`${first.url}/api/v1/students`, JSON.stringify({ ...ada, email: 'late@example.com' }), async () => {
    await sleep(200)
    first.process.kill('SIGTERM')
    await sleep(300)
  })
  const answer = await inFlight
  t.equal(answer.status, 201, 'the request in flight at SIGTERM is answered')
  const [code] = await exited
  t.equal(code, 0, 'exits cleanly')
  t.ok(first.logs.some(entry => entry.msg === 'shutting down: finishing in-flight requests'))
  await t.rejects(stat(path.join(dataDir, 'postgres', 'postmaster.pid')), 'the embedded database is stopped')

  const second = await startServer(dataDir)
  t.teardown(() => second.process.kill('SIGKILL'))
  const again = await fetch(`${second.url}/students/${student.id}`)
  t.same(await again.json(), student, 'data survives the restart')
  const list = await (await fetch(`${second.url}/students`)).json() as unknown[]
  t.equal(list.length, 2, 'the request answered during shutdown was kept')
  second.process.kill('SIGTERM')
  t.equal((await once(second.process, 'exit'))[0], 0)
})

t.test('a bad configuration stops start-up with a message naming the variable', async t => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    env: { ...process.env, PORT: 'eighty' }, stdio: ['ignore', 'pipe', 'pipe']
  })
  let stderr = ''
  child.stderr.on('data', chunk => { stderr += chunk })
  const [code] = await once(child, 'exit')
  t.equal(code, 1)
  t.match(stderr, 'Invalid configuration: PORT must be a whole number from 0 to 65535, got "eighty"')
})
