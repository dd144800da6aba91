import { execFile } from 'node:child_process'
import { once } from 'node:events'
import http from 'node:http'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { build } from '../helper.js'
import { PASSWORD, userWithRoles } from '../routes/api/accounts.js'
import { student } from '../routes/students/fixtures.js'

const run = promisify(execFile)
type Ran = { code?: number, stdout: string, stderr: string }

t.test('npm run import and npm run export: a file into the API and a list out of it, with progress on standard error', async t => {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const dir = await mkdtemp(path.join(os.tmpdir(), 'transfer-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const script = (name: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> =>
    run(process.execPath, [...process.execArgv, `scripts/${name}.ts`, ...args], { env: { ...process.env, ...env } })
      .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }), (error: Ran) => error)

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

  t.match(await script('import', []), { code: 2, stderr: /Usage: npm run import/ })
  t.match(await script('import', [csv, '--bogus']), { code: 2, stderr: /Unknown option '--bogus'[\s\S]*Usage: npm run import/ })
  t.match(await script('export', ['--bogus']), { code: 2, stderr: /Unknown option '--bogus'[\s\S]*Usage: npm run export/ })
  t.match(await script('import', [path.join(dir, 'missing.csv')]), { code: 1, stderr: /ENOENT/ })
  t.match(await script('export', ['--url', 'http://127.0.0.1:1']), { code: 1, stderr: /^http:\/\/127\.0\.0\.1:1: fetch failed/ })
  t.match(await script('import', [path.join(dir, 'students.txt')]), { code: 2, stderr: /name a \.csv or an \.ndjson/ })
  t.match(await script('export', ['--format', 'xml']), { code: 2, stderr: /Usage: npm run export/ })
  // A stand-in service: busy at the first import (503, Retry-After), then answering; an export
  // without its count, cut off midway.
  let imports = 0
  const standIn = http.createServer((request, response) => {
    request.resume()
    if (request.method === 'POST') {
      const answers = [[503, { 'retry-after': '1' }], [409, { 'retry-after': '1' }], [200, {}], [409, {}]] as const
      const [status, headers] = answers[imports++]!
      return request.on('end', () => response.writeHead(status, headers).end(status === 200 ? '{"inserted":50}' : '{}'))
    }
    if (request.url!.includes('count=exact')) return response.writeHead(200, { 'content-type': 'application/json' }).end('[]')
    response.writeHead(200, { 'content-type': 'text/csv' }).write('id\n1\n', () => response.destroy())
  }).listen(0, '127.0.0.1')
  await once(standIn, 'listening')
  t.teardown(() => standIn.close())
  const standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`
  const busy = await script('import', [csv], { API_URL: standInUrl })
  t.match(busy, { code: 0, stdout: '{"inserted":50}\n', stderr: /answered 503[\s\S]*trying again in 1 s[\s\S]*answered 409[\s\S]*trying again in 2 s/ }, 'busy, or the key under way: sent again')
  t.equal(imports, 3)
  t.match(await script('import', [csv], { API_URL: standInUrl }), { code: 1, stderr: /answered 409 in/ }, 'another 409 (an address taken): not sent again')
  const cut = await script('export', [], { API_URL: standInUrl, API_TOKEN: 'a token' })
  t.match(cut, { code: 1, stderr: /exporting students: failed after 1 rows: .*; the output is incomplete/ })
  t.match(await script('import', [csv, '--url', 'https://127.0.0.1:1', '--attempts', '1']), { code: 1, stderr: /the connection failed/ }, 'https too')
  t.match(await script('import', [csv, '--url', 'http://127.0.0.1:1', '--attempts', '2']), { code: 1, stderr: /trying again in 1 s, with the same Idempotency-Key/ }, 'no service: tried again, then given up')
})
