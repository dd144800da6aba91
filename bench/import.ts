import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createReadStream } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { pipeline } from 'node:stream/promises'
import type pg from 'pg'
import type { Server } from './harness.js'
import { median, withPeakRss } from './load.js'

export interface ImportFigures { rows: number, serviceRowsPerSecond: number, copyRowsPerSecond: number, ratio: number, peakRssMb: number }

interface DatabaseServer { host: string, port: number, user: string, password: string }

/** Runs psql with these arguments against the bench's database; fails if it does. */
async function psql (server: DatabaseServer, database: string, args: string[]): Promise<void> {
  const child = spawn('psql', ['-h', server.host, '-p', String(server.port), '-U', server.user, '-d', database, '-Atq', ...args],
    { env: { ...process.env, PGPASSWORD: server.password }, stdio: ['ignore', 'ignore', 'inherit'] })
  const [code] = await once(child, 'exit') as [number]
  if (code !== 0) throw new Error(`psql exited ${code}`)
}

/** POSTs the file to the import, streamed as curl would send it; the answer's body. */
async function upload (url: string, file: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method: 'POST', headers: { 'content-type': 'text/csv' } }, response => {
      let body = ''
      response.setEncoding('utf8').on('data', chunk => { body += chunk }).on('end', () => {
        if (response.statusCode === 200) resolve(body)
        else reject(new Error(`the import answered ${response.statusCode}: ${body}`))
      })
    })
    request.on('error', reject)
    pipeline(createReadStream(file), request).catch(reject)
  })
}

/**
 * `rows` students from a CSV file: the service's import (`POST /students/import`, each row
 * checked, its audit entry and change event written) beside psql's `\copy` of the same file into
 * the same table, alternately REPEAT times, the rows taken out again after each: the medians
 * of the rows a second, and the service's peak resident memory meanwhile (sampled every 50 ms).
 */
export async function benchImport (server: DatabaseServer, database: string, db: pg.Client, service: Server, rows: number, repeat: number): Promise<ImportFigures> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'bench-import-'))
  const file = path.join(folder, 'students.csv')
  try {
    await psql(server, database, ['-o', file, '-c', `copy (select 'Imported ' || md5(g::text) as name, 'imported' || g || '@example.com' as email,
      18 + g % 60 as age, date '1950-01-01' + g % 20000 as dob from generate_series(1, ${rows}) g) to stdout (format csv, header)`])
    const takeOut = async () => {
      await db.query('delete from students where email like \'imported%\'')
      await db.query('vacuum analyze students')
    }
    const services: number[] = []
    const copies: number[] = []
    let peakRssMb = 0
    for (let round = 0; round < repeat; round++) {
      let started = performance.now()
      const { result, peakMb } = await withPeakRss(service.process.pid!, () => upload(`${service.url}/students/import`, file))
      peakRssMb = Math.max(peakRssMb, peakMb)
      const answer = JSON.parse(result) as { inserted: number }
      if (answer.inserted !== rows) throw new Error(`the import made ${answer.inserted} students of ${rows}`)
      services.push(rows / ((performance.now() - started) / 1000))
      await takeOut()
      started = performance.now()
      await psql(server, database, ['-c', `\\copy students (name, email, age, dob) from '${file}' with (format csv, header)`])
      copies.push(rows / ((performance.now() - started) / 1000))
      await takeOut()
    }
    const serviceRowsPerSecond = median(services)
    const copyRowsPerSecond = median(copies)
    return { rows, serviceRowsPerSecond, copyRowsPerSecond, ratio: serviceRowsPerSecond / copyRowsPerSecond, peakRssMb }
  } finally {
    await rm(folder, { recursive: true, force: true })
  }
}
