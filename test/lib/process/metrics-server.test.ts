import { once } from 'node:events'
import net from 'node:net'
import t from 'tap'
import { boundAddress, closeMetrics, serveMetrics } from '../../../lib/process/metrics-server.js'

const local = { host: '127.0.0.1', port: 0 }

t.test('a collection that fails answers 500 and is reported', async t => {
  const errors: unknown[] = []
  const server = await serveMetrics(local, { contentType: 'text/plain', text: () => Promise.reject(new Error('no metrics')) }, error => errors.push(error))
  t.teardown(() => closeMetrics(server))
  const res = await fetch(`http://127.0.0.1:${boundAddress(server).port}/metrics`)
  t.equal(res.status, 500)
  t.match(errors, [{ message: 'no metrics' }])
})

t.test('a port taken already fails the start', async t => {
  const taken = net.createServer().listen(0, '127.0.0.1')
  await once(taken, 'listening')
  t.teardown(() => taken.close())
  const { port } = taken.address() as net.AddressInfo
  await t.rejects(serveMetrics({ host: '127.0.0.1', port }, { contentType: 'text/plain', text: async () => '' }, () => {}), { code: 'EADDRINUSE' })
})

t.test('closing ends a scraper\'s idle keep-alive connection', async t => {
  const server = await serveMetrics(local, { contentType: 'text/plain', text: async () => 'up 1\n' }, () => {})
  const res = await fetch(`http://127.0.0.1:${boundAddress(server).port}/metrics`)
  t.equal(await res.text(), 'up 1\n')
  await closeMetrics(server)
  t.notOk(server.listening)
})
