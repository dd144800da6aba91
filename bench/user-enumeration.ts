// npm run bench:enumeration: can a caller tell an unknown e-mail address from a wrong
// password by login's answer or its time? 50 tries of each, interleaved, against the
// production server (dist/); prints both medians and whether the bodies were identical.
import { benchDatabase, start, stop } from './harness.js'

const TRIES = Number(process.env.ENUMERATION_TRIES ?? 50)
const password = 'a benchmark password'
const { env, drop } = await benchDatabase()
const service = await start('service', ['dist/server.js'], env)
try {
  const post = (path: string, body: unknown) =>
    fetch(`${service.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  await post('/api/register', { name: 'Known', email: 'known@example.com', password, c_password: password })

  const attempts = { 'unknown e-mail': { email: 'nobody@example.com', password }, 'wrong password': { email: 'known@example.com', password: 'not the password' } }
  const times: Record<string, number[]> = { 'unknown e-mail': [], 'wrong password': [] }
  const bodies: Record<string, Set<string>> = { 'unknown e-mail': new Set(), 'wrong password': new Set() }
  for (let i = 0; i < TRIES; i++) {
    for (const [name, body] of Object.entries(attempts)) {
      const started = process.hrtime.bigint()
      const res = await post('/api/login', body)
      const text = await res.text()
      times[name]!.push(Number(process.hrtime.bigint() - started) / 1e6)
      bodies[name]!.add(`${res.status} ${text}`)
    }
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!
  for (const name of Object.keys(attempts)) {
    console.log(`${name.padEnd(15)} median ${median(times[name]!).toFixed(1)} ms over ${TRIES} tries; answers: ${[...bodies[name]!].join(' | ')}`)
  }
  const [a, b] = Object.values(bodies).map(set => [...set].join())
  console.log(`identical answers: ${a === b ? 'yes' : 'NO'}; median ratio ${(median(times['unknown e-mail']!) / median(times['wrong password']!)).toFixed(2)}`)
} finally {
  await stop(service)
  await drop()
}
