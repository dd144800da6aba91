// npm run bench:enumeration: can a caller tell an unknown e-mail address from a wrong
// password by login's answer or its time, or from a known one by a password reset's? 50 tries
// of each, interleaved, against the production server (dist/), whose mail goes to an SMTP
// server of the benchmark's; prints the medians and whether the bodies were identical.
import type { AddressInfo } from 'node:net'
import { SMTPServer } from 'smtp-server'
import { benchDatabase, start, stop } from './harness.js'

const TRIES = Number(process.env.ENUMERATION_TRIES ?? 50)
const password = 'a benchmark password'
const { env, drop } = await benchDatabase()
// Takes every mail and keeps none.
const smtp = new SMTPServer({ authOptional: true, disabledCommands: ['STARTTLS'], logger: false, onData (stream, _session, callback) { stream.resume().on('end', () => callback()) } })
await new Promise<void>(resolve => smtp.listen(0, '127.0.0.1', resolve))
const service = await start('service', ['dist/server.js'], { ...env, SMTP_URL: `smtp://127.0.0.1:${(smtp.server.address() as AddressInfo).port}` })
try {
  const post = (path: string, body: unknown) =>
    fetch(`${service.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  await post('/api/register', { name: 'Known', email: 'known@example.com', password, c_password: password })

  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  /** Sends each case's request in turn, TRIES times; prints each median, and whether the answers were the same. */
  async function compare (route: string, cases: Record<string, unknown>) {
    const times: Record<string, number[]> = {}
    const bodies: Record<string, Set<string>> = {}
    for (let i = 0; i < TRIES; i++) {
      for (const [name, body] of Object.entries(cases)) {
        const started = process.hrtime.bigint()
        const res = await post(route, body)
        const text = await res.text()
        ;(times[name] ??= []).push(Number(process.hrtime.bigint() - started) / 1e6)
        ;(bodies[name] ??= new Set()).add(`${res.status} ${text}`)
      }
    }
    for (const name of Object.keys(cases)) {
      console.log(`${route} ${name.padEnd(15)} median ${median(times[name]!).toFixed(1)} ms over ${TRIES} tries; answers: ${[...bodies[name]!].join(' | ')}`)
    }
    const [first, second] = Object.keys(cases)
    console.log(`${route}: identical answers: ${[...bodies[first!]!].join() === [...bodies[second!]!].join() ? 'yes' : 'NO'}; median ratio ${(median(times[first!]!) / median(times[second!]!)).toFixed(2)}`)
  }
  await compare('/api/login', { 'unknown e-mail': { email: 'nobody@example.com', password }, 'wrong password': { email: 'known@example.com', password: 'not the password' } })
  await compare('/api/password/forgot', { 'unknown e-mail': { email: 'nobody@example.com' }, 'known e-mail': { email: 'known@example.com' } })
} finally {
  await stop(service)
  await drop()
  smtp.close()
}
