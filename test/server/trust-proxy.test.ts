// Behind deploy/haproxy.cfg, as the tests run it, with TRUST_PROXY naming HAProxy's address:
// each client is itself, in the per-IP limits, its sessions and the audit log. The clients
// differ by the loopback address their connections come from (all of 127.0.0.0/8 is this
// machine); HAProxy connects to the instance from 127.0.0.1.
import { spawnSync } from 'node:child_process'
import http from 'node:http'
import t from 'tap'
import { within } from '../helper.js'
import { databaseEnv, freePort, listeningWorkers, startBalancer, startServer } from './process.js'

const haproxy = spawnSync('haproxy', ['-v']).status === 0

interface Answer { status: number, body: any }

/** A JSON request from the given local address, with the headers given. */
function send (from: string, url: string, method: string, headers: Record<string, string> = {}, body?: unknown): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body)
    const req = http.request(url, { method, localAddress: from, agent: false, headers: { ...headers, ...(text === undefined ? {} : { 'content-type': 'application/json' }) } }, res => {
      let answer = ''
      res.on('data', chunk => { answer += chunk })
      res.on('end', () => resolve({ status: res.statusCode!, body: answer === '' ? undefined : JSON.parse(answer) }))
    })
    req.on('error', reject)
    req.end(text)
  })
}

const ADMIN = { email: 'admin@example.com', password: 'the admin password' }
const PER_IP = 3

t.test('behind HAProxy with TRUST_PROXY: every client has its own per-IP budget, and its own address in its sessions and the audit log; X-Forwarded-For chooses nothing',
  { skip: haproxy ? false : 'haproxy is not installed (.ci/run installs it)' }, async t => {
    const env = { ...await databaseEnv(t), ADMIN_EMAIL: ADMIN.email, ADMIN_PASSWORD: ADMIN.password, AUTH_RATE_LIMIT_IP: String(PER_IP), AUTH_RATE_LIMIT_EMAIL: '100', TRUST_PROXY: '127.0.0.1' }
    // With WORKERS: each worker builds its server as server.ts does alone, the primary forks them.
    const instance = await startServer({ ...env, PORT: String(await freePort()), WORKERS: '2' })
    t.teardown(() => instance.kill())
    t.ok(await within(60_000, () => listeningWorkers(instance).length === 2), 'both workers listen')
    const direct = instance.url

    const balanced = await startBalancer(t, [direct, direct])
    t.ok(balanced, 'HAProxy sends to the instance')
    const url = balanced!

    const login = (from: string, base: string, credentials: { email: string, password: string }, headers: Record<string, string> = {}) =>
      send(from, `${base}/api/login`, 'POST', headers, credentials)
    const wrong = (n: number) => ({ email: `nobody-${n}@example.com`, password: 'not the password' })

    // One client spends its budget of logins.
    for (let n = 1; n <= PER_IP; n++) t.equal((await login('127.0.0.2', url, wrong(n))).status, 401, `the first client's failed login ${n}`)
    t.equal((await login('127.0.0.2', url, wrong(PER_IP + 1))).status, 429, 'the first client is past its budget')
    // Naming another address, through HAProxy or around it, does not give it a new one.
    t.equal((await login('127.0.0.2', url, ADMIN, { 'x-forwarded-for': '127.0.0.9' })).status, 429, 'through HAProxy, a made-up X-Forwarded-For is not its address')
    t.equal((await login('127.0.0.2', direct, ADMIN, { 'x-forwarded-for': '127.0.0.9' })).status, 429, 'nor straight to the instance')

    // Another client behind the same HAProxy is still served.
    const second = await login('127.0.0.3', url, ADMIN)
    t.equal(second.status, 200, 'a second client has a budget of its own')
    const token = { authorization: `Bearer ${second.body.data}` }

    // Two more logins sending X-Forwarded-For: one through HAProxy, one straight to the instance.
    t.equal((await login('127.0.0.4', url, ADMIN, { 'x-forwarded-for': '203.0.113.7' })).status, 200)
    t.equal((await login('127.0.0.5', direct, ADMIN, { 'x-forwarded-for': '203.0.113.8' })).status, 200)

    const sessions = await send('127.0.0.3', `${url}/api/sessions`, 'GET', token)
    t.equal(sessions.status, 200)
    t.same((sessions.body.data as { ip: string }[]).map(session => session.ip).sort(), ['127.0.0.3', '127.0.0.4', '127.0.0.5'],
      'each session has its own client\'s address: neither HAProxy\'s nor one a client named')

    const audit = await send('127.0.0.3', `${url}/api/audit?sort=id&action[in]=login,login-failed`, 'GET', token)
    t.equal(audit.status, 200)
    t.same((audit.body.data as { action: string, ip: string }[]).map(entry => [entry.action, entry.ip]), [
      ...Array.from({ length: PER_IP }, () => ['login-failed', '127.0.0.2']),
      ['login', '127.0.0.3'], ['login', '127.0.0.4'], ['login', '127.0.0.5']
    ], 'the audit log has each client\'s own address')
  })
