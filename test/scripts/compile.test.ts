import { appendFile, readFile } from 'node:fs/promises'
import path from 'node:path'
import t from 'tap'
import { databaseEnv } from '../server/process.js'
import { checkout, npmRun, outputs } from './checkout.js'

t.test('npm run migrate, knex and reset-password compile only what changed since the last build', async t => {
  const folder = await checkout(t)
  const env = await databaseEnv(t)
  const migrate = async () => t.match((await npmRun(folder, env, 'migrate')).stdout, /^(Migrated: 20261122000000_create_students, |The database is at the latest schema already$)/m, 'npm run migrate migrates')
  const knex = async () => t.match((await npmRun(folder, env, 'knex', 'migrate:list')).stdout, /No Pending Migration files Found/, 'npm run knex runs the CLI')
  const resetPassword = async () => t.match(await npmRun(folder, env, 'reset-password', 'nobody@example.com').catch((error: Error) => error), { code: 1, stderr: /No user has the e-mail address nobody@example.com/ }, 'npm run reset-password runs the command')

  await migrate()
  const built = await outputs(folder)
  t.ok(built['scripts/migrate.js'] && built['server.js'], `the first run compiles dist/ (${Object.keys(built).length} files)`)
  for (const command of [migrate, knex, resetPassword]) {
    await command()
    t.same(await outputs(folder), built, 'nothing changed: no output written again, none removed')
  }

  // The scripts share the one build: a source changed, the next of them compiles it, and nothing else.
  await appendFile(path.join(folder, 'scripts/migrate.ts'), '\n// changed since the last build\n')
  await knex()
  t.match(await readFile(path.join(folder, 'dist/scripts/migrate.js'), 'utf8'), '// changed since the last build', 'after scripts/migrate.ts changed: compiled again')
  const after = await outputs(folder)
  t.same(Object.keys(after).filter(file => after[file] !== built[file] && !file.endsWith('.tsbuildinfo')), ['scripts/migrate.js', 'scripts/migrate.js.map'], 'and nothing else')
})
