import { spawn } from 'node:child_process'
import { mkdir, rm, stat, writeFile } from 'node:fs/promises'
import path from 'node:path'
import readline from 'node:readline'
import t, { type Test } from 'tap'
import { databaseEnv, freePort } from '../server/process.js'
import { checkout, npmRun, outputs, scriptEnv } from './checkout.js'

/** `npm start` in a checkout, until it listens; its process group is killed when the test ends. */
async function npmStart (t: Test, folder: string, env: NodeJS.ProcessEnv): Promise<string> {
  const child = spawn('npm', ['start', '--silent'], { cwd: folder, env: scriptEnv(env), stdio: ['ignore', 'pipe', 'inherit'], detached: true })
  t.teardown(() => { try { process.kill(-child.pid!, 'SIGKILL') } catch { /* already gone */ } })
  const lines = readline.createInterface({ input: child.stdout })
  return new Promise<string>((resolve, reject) => {
    child.once('exit', code => reject(new Error(`npm start exited with ${code}`)))
    lines.on('line', line => {
      const match = /"msg":"Server listening at (http:\/\/127\.0\.0\.1:\d+)"/.exec(line)
      if (match) resolve(match[1]!)
    })
  })
}

t.test('npm start beside an earlier build: its dist/ kept, a deleted source\'s output removed; .env read, the environment winning over it', async t => {
  const folder = await checkout(t)
  // A route whose source is deleted after the build: its compiled file would still be loaded.
  await mkdir(path.join(folder, 'routes/gone'))
  await writeFile(path.join(folder, 'routes/gone/index.ts'), 'import type { FastifyPluginAsync } from \'fastify\'\nconst gone: FastifyPluginAsync = async fastify => { fastify.get(\'/\', async () => ({ here: true })) }\nexport default gone\n')
  const env = await databaseEnv(t)
  await npmRun(folder, env, 'compile')
  t.ok(await stat(path.join(folder, 'dist/routes/gone/index.js')), 'built with the route')
  await rm(path.join(folder, 'routes/gone'), { recursive: true })
  const built = await outputs(folder)

  const port = await freePort()
  // DB_NAME of the environment wins over the file's, a database that does not exist: were it
  // the file's, the service would exit 1.
  await writeFile(path.join(folder, '.env'), `# settings of this checkout\nPORT=${port}\nHOST=127.0.0.1\nDB_NAME=no_such_database\n`)
  const { PORT: _port, HOST: _host, ...rest } = env
  const url = await npmStart(t, folder, { ...rest, LOG_LEVEL: 'info', METRICS_PORT: 'off' })
  t.equal(url, `http://127.0.0.1:${port}`, 'PORT and HOST from .env')

  const kept = await outputs(folder)
  const removed = Object.keys(built).filter(file => !(file in kept))
  t.same(removed, ['routes/gone/index.js', 'routes/gone/index.js.map'], 'only the deleted source\'s outputs removed')
  t.same(Object.keys(kept).filter(file => kept[file] !== built[file] && !file.endsWith('.tsbuildinfo')), [], 'every other compiled file the same, neither deleted nor written again')
  t.equal((await fetch(`${url}/gone`)).status, 404, 'the deleted route is not served')
  t.equal((await fetch(`${url}/health/ready`)).status, 200, 'the service serves, on the database of the environment\'s DB_NAME')
})
