import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { databaseEnv, startServer } from './server/process.js'

const run = promisify(execFile)

t.test('a client generated from openapi.json type-checks and runs a whole scenario against the server', async t => {
  await run('npx', ['openapi-typescript', 'openapi.json', '-o', 'examples/client/api.d.ts'])
  // Generated and type-checked: either step that fails rejects, and fails the test.
  await run('npx', ['tsc', '-p', 'examples/client/tsconfig.json'])

  const server = await startServer({ ...await databaseEnv(t), REGISTER_ROLES: 'User' })
  t.teardown(() => server.kill())
  const { stdout } = await run('npx', ['tsx', 'examples/client/scenario.ts', server.url])
  const steps = stdout.trim().split('\n')
  t.same(steps, [
    'ok - register', 'ok - login', 'ok - refresh', 'ok - list sessions', 'ok - end the other session', 'ok - profile', 'ok - create a client',
    'ok - a retry of the create gets the same client', 'ok - list clients',
    'ok - make an API key', 'ok - the key reads clients, and may not delete one', 'ok - revoke the key',
    'ok - update a client with PATCH and If-Match', 'ok - a stale If-Match gets 412 and the current tag', 'ok - delete a client', 'ok - the deleted client is gone', 'ok - logout',
    'ok - the token no longer works', 'ok - create a student (v1)', 'ok - read it through /students',
    'ok - rename it (v1 PUT)', 'ok - change its age (PATCH /students)',
    'ok - a filtered, sorted list finds it', 'ok - and counts it', 'ok - delete it', 'ok - it is gone from v1 too'
  ])
})
