import t from 'tap'
import { within } from '../helper.js'
import { startReceiver } from '../routes/api/webhook-receiver.js'
import { databaseEnv, startServer } from './process.js'

const admin = { email: 'admin@example.com', password: 'correct horse battery' }

t.test('an instance killed mid-delivery: another sends the delivery once its lease ends, and nothing is lost', async t => {
  const env = { ...await databaseEnv(t), ADMIN_EMAIL: admin.email, ADMIN_PASSWORD: admin.password, WEBHOOK_ALLOW_PRIVATE: 'true', WEBHOOK_TIMEOUT: '1s', WEBHOOK_FIRST_RETRY: '100ms' }
  const one = await startServer(env)
  t.teardown(() => one.kill())
  const post = async (base: string, path: string, body: object, token?: string) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...token === undefined ? {} : { authorization: `Bearer ${token}` } }, body: JSON.stringify(body) })
    return { status: res.status, body: await res.json() as { data: { id: number }, secret: string } }
  }
  const token = (await post(one.url, '/api/login', admin)).body.data as unknown as string
  // The first delivery is held unanswered: the instance sending it dies meanwhile.
  let requests = 0
  const receiver = await startReceiver(t, () => ++requests === 1 ? { status: 200, delayMs: 600_000 } : { status: 200 })
  const made = await post(one.url, '/api/webhooks', { url: receiver.url, types: ['student.created'] }, token)
  t.equal(made.status, 201)
  t.equal((await post(one.url, '/students', { name: 'Ada', email: 'ada@example.com', age: 36, dob: '1815-12-10' })).status, 201)
  t.ok(await within(10_000, () => requests === 1), 'its first attempt reached the receiver')
  one.kill()

  const two = await startServer(env)
  t.teardown(() => two.kill())
  // From the other instance's start (which a loaded machine slows by seconds): the lease, taken
  // before the kill, ends within WEBHOOK_TIMEOUT and 5 s of it.
  const started = Date.now()
  t.ok(await within(20_000, () => receiver.received.length === 1), 'the other instance sent it')
  t.ok(Date.now() - started < 10_000, 'once the lease (WEBHOOK_TIMEOUT and 5 s) ended')
  const [event] = receiver.delivered(made.body.secret)
  t.match(event, { type: 'student.created', data: { name: 'Ada' } })
  const log = await fetch(`${two.url}/api/webhooks/${made.body.data.id}/deliveries`, { headers: { authorization: `Bearer ${token}` } })
  t.match(((await log.json()) as { data: unknown }).data, [{ event_id: event!.id, state: 'delivered', attempts: [{ status: 200 }] }], 'delivered; the attempt cut short by the kill left no outcome')
})
