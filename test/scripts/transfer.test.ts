import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { build } from '../helper.js'
import { PASSWORD, userWithRoles } from '../routes/api/accounts.js'
import { student } from '../routes/students/fixtures.js'
import { script } from './cli.js'

t.test('npm run import and npm run export: a file into the API and a list out of it, with progress on standard error', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const dir = await mkdtemp(path.join(os.tmpdir(), 'transfer-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))

  const rows = Array.from({ length: 50 }, (_, i) => student(i))
  const csv = path.join(dir, 'students.csv')
  await writeFile(csv, ['name,email,age,dob', ...rows.map(row => `${row.name},${row.email},${row.age},${row.dob}`)].join('\n') + '\n')
  const imported = await script('import', [csv, '--url', url, '--key', 'file-1'])
  t.equal(imported.code, 0, imported.stderr)
  t.same(JSON.parse(imported.stdout), { inserted: 50, updated: 0, unchanged: 0, skipped: 0, failed: 0, errors: [] })
  t.match(imported.stderr, /importing students\.csv: 50 rows sent; the service checks and writes them…\nimporting students\.csv: answered 200 in \d+:\d\d\n/, 'plain lines when not on a terminal')
  const again = await script('import', [csv, '--url', url, '--key', 'file-1'])
  t.equal(again.stdout, imported.stdout, 'the same key: the first answer, nothing written again')
  t.equal((await app.knex('students').count({ n: '*' }))[0]!.n, '50')
  const skipped = await script('import', [csv, '--url', url, '--on-conflict', 'skip'])
  t.match(JSON.parse(skipped.stdout), { inserted: 0, skipped: 50 }, '--on-conflict')
  const refused = await script('import', [csv, '--url', url])
  t.match(refused, { code: 1, stdout: /"code":"invalid_rows"/ }, 'a refused import exits 1 with the error body')

  const out = path.join(dir, 'adults.csv')
  const exported = await script('export', ['--url', url, '--out', out, 'age[gte]=40', 'sort=-age'])
  t.equal(exported.code, 0, exported.stderr)
  const expected = await app.inject({ url: '/students?age[gte]=40&sort=-age', headers: { accept: 'text/csv' } })
  t.equal(await readFile(out, 'utf8'), expected.body, 'the list as CSV, filtered and sorted')
  t.match(exported.stderr, new RegExp(`exporting students: ${expected.body.trimEnd().split('\n').length - 1} rows written to ${out.replaceAll('.', '\\.')} in`))
  const ndjson = await script('export', ['--url', url, '--format', 'ndjson', 'limit=5'])
  t.equal(ndjson.stdout.trimEnd().split('\n').length, 50, 'to standard output; every row (an export has no page limit)')

  const admin = await userWithRoles(app, ['Admin'])
  const key = (await app.inject({ method: 'POST', url: '/api/keys', headers: { authorization: `Bearer ${admin.token}` }, payload: { name: 'transfers', permissions: ['client-list', 'client-create'], current_password: PASSWORD } })).json<{ secret: string }>().secret
  const clients = path.join(dir, 'clients.ndjson')
  await writeFile(clients, JSON.stringify({ name: 'Acme', vat_number: '5252248481', street: 'ul. Prosta 1', city: 'Warszawa', post_code: '00-850', email: 'office@acme.example' }) + '\n')
  const clientImport = await script('import', [clients, '--url', url, '--resource', 'clients'], { API_TOKEN: key })
  t.match(JSON.parse(clientImport.stdout), { success: true, data: { inserted: 1 } }, 'with API_TOKEN, an API key')
  const anonymous = await script('export', ['--url', url, '--resource', 'clients'])
  t.match(anonymous, { code: 1, stderr: /^401 .*"code":"unauthenticated"/ })
})
