import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { databaseEnv, startServer } from './server/process.js'

const run = promisify(execFile)
const readme = await readFile(new URL('../README.md', import.meta.url), 'utf8')

/** The fenced blocks of a README section, with the line before each. */
function blocks (heading: string): { lead: string, lang: string, text: string }[] {
  const start = readme.indexOf(`\n${heading}\n`)
  const section = readme.slice(start + heading.length + 2, readme.indexOf('\n#', start + heading.length + 2))
  return [...section.matchAll(/([^\n]*)\n\n```(\w+)\n([\s\S]*?)```/g)].map(([, lead, lang, text]) => ({ lead: lead!, lang: lang!, text: text! }))
}

t.test('"Generate a client" runs as written, in a new folder, against a listening server', async t => {
  const server = await startServer(await databaseEnv(t))
  t.teardown(() => server.kill())
  const dir = await mkdtemp(path.join(os.tmpdir(), 'readme-client-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))

  const steps = blocks('### Generate a client')
  t.same(steps.map(step => step.lang), ['sh', 'ts', 'sh'], 'shell, the client, shell')
  const [setup, client, check] = steps as [typeof steps[0], typeof steps[0], typeof steps[0]]
  const file = /`([\w.-]+\.ts)`/.exec(client.lead)?.[1]
  t.equal(file, 'client.ts', 'the README names the file')
  // Only the address differs: the test's server listens on a port of its own.
  const here = (text: string) => text.replaceAll('http://localhost:3000', server.url)

  await run('sh', ['-e', '-c', here(setup.text)], { cwd: dir })
  const folder = path.join(dir, /mkdir (\S+)/.exec(setup.text)![1]!)
  await writeFile(path.join(folder, file!), here(client.text))
  const { stdout } = await run('sh', ['-e', '-c', check.text], { cwd: folder })
  t.match(stdout, /^created student \d+\nlogged in as me-\d+@example\.com\n$/, 'the client ran')
})

t.test('the README and docs/ link nothing outside the repository', async t => {
  for (const file of ['README.md', ...(await import('node:fs/promises').then(fs => fs.readdir('docs'))).map(name => `docs/${name}`)]) {
    const text = await readFile(file, 'utf8')
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^https?:\/\/localhost[:/]/.test(target!) || target!.startsWith('#')) continue
      t.notMatch(target, /^[a-z]+:/, `${file}: ${target} is no outside address`)
      t.ok(existsSync(path.join(path.dirname(file), target!.split('#')[0]!)), `${file}: ${target} is in the repository`)
    }
    t.notMatch(text, /\.\.\/shared\//, `${file}: nothing beside the repository`)
  }
})
