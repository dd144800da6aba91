import { once } from 'node:events'
import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { script } from './cli.js'

t.test('npm run import and npm run export refuse what they cannot do, and say why; an import busy is sent again, an export cut off fails', async t => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cli-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const csv = path.join(dir, 'students.csv')
  await writeFile(csv, 'name,email,age,dob\nAda,ada@example.com,36,1815-12-10\n')
  t.match(await script('import', []), { code: 2, stderr: /Usage: npm run import/ })
  t.match(await script('import', [csv, '--bogus']), { code: 2, stderr: /Unknown option '--bogus'[\s\S]*Usage: npm run import/ })
  t.match(await script('export', ['--bogus']), { code: 2, stderr: /Unknown option '--bogus'[\s\S]*Usage: npm run export/ })
  t.match(await script('import', [path.join(dir, 'missing.csv')]), { code: 1, stderr: /ENOENT/ })
  t.match(await script('export', ['--url', 'http://127.0.0.1:1']), { code: 1, stderr: /^http:\/\/127\.0\.0\.1:1: fetch failed/ })
  t.match(await script('import', [path.join(dir, 'students.txt')]), { code: 2, stderr: /name a \.csv or an \.ndjson/ })
  t.match(await script('export', ['--format', 'xml']), { code: 2, stderr: /Usage: npm run export/ })
  // A stand-in service: busy at the first import (503, Retry-After), then answering; an export
  // without its count, cut off midway.
  // An import waits to be told to send its file (Expect: 100-continue): those refused never send it.
  let imports = 0
  const uploaded: number[] = []
  const standIn = http.createServer((request, response) => {
    request.resume()
    if (request.url!.includes('count=exact')) return response.writeHead(200, { 'content-type': 'application/json' }).end('[]')
    response.writeHead(200, { 'content-type': 'text/csv' }).write('id\n1\n', () => response.destroy())
  }).listen(0, '127.0.0.1')
  standIn.on('checkContinue', (request: http.IncomingMessage, response: http.ServerResponse) => {
    const answers = [[503, { 'retry-after': '1' }], [409, { 'retry-after': '1' }], [200, {}], [409, {}]] as const
    const [status, headers] = answers[imports++]!
    let bytes = 0
    request.on('data', (chunk: Buffer) => { bytes += chunk.length })
    if (status !== 200) {
      // Refused a moment later: whatever a client that did not wait has sent by then is counted.
      return setTimeout(() => {
        uploaded.push(bytes)
        response.writeHead(status, headers).end('{}')
      }, 300)
    }
    response.writeContinue()
    request.on('end', () => {
      uploaded.push(bytes)
      response.writeHead(status, headers).end('{"inserted":50}')
    })
  })
  await once(standIn, 'listening')
  t.teardown(() => standIn.close())
  const standInUrl = `http://127.0.0.1:${(standIn.address() as AddressInfo).port}`
  const busy = await script('import', [csv], { API_URL: standInUrl })
  t.match(busy, { code: 0, stdout: '{"inserted":50}\n', stderr: /answered 503[\s\S]*trying again in 1 s[\s\S]*answered 409[\s\S]*trying again in 2 s/ }, 'busy, or the key under way: sent again')
  t.equal(imports, 3)
  t.match(await script('import', [csv], { API_URL: standInUrl }), { code: 1, stderr: /answered 409 in/ }, 'another 409 (an address taken): not sent again')
  t.same(uploaded, [0, 0, (await stat(csv)).size, 0], 'the file sent once, to the attempt let in')
  const cut = await script('export', [], { API_URL: standInUrl, API_TOKEN: 'a token' })
  t.match(cut, { code: 1, stderr: /exporting students: failed after 1 rows: .*; the output is incomplete/ })
  t.match(await script('import', [csv, '--url', 'https://127.0.0.1:1', '--attempts', '1']), { code: 1, stderr: /the connection failed/ }, 'https too')
  t.match(await script('import', [csv, '--url', 'http://127.0.0.1:1', '--attempts', '2']), { code: 1, stderr: /trying again in 1 s, with the same Idempotency-Key/ }, 'no service: tried again, then given up')
})
