import net from 'node:net'
import t from 'tap'
import type { FastifyBaseLogger } from 'fastify'
import type pg from 'pg'
import { LISTENER_NAME, NotificationListener, type ChannelHandlers } from '../../../lib/db/notification-listener.js'
import { createDatabase, testPool } from '../../helper.js'

/** A logger that keeps what was warned. */
function logger () {
  const warned: unknown[] = []
  return { warned, log: { warn: (...args: unknown[]) => warned.push(args) } as unknown as FastifyBaseLogger }
}

/** Handlers that record what they are told, and a promise of the next call of each. */
function recorder () {
  const told: string[] = []
  let waiting: ((what: string) => void) | undefined
  const record = (what: string) => { told.push(what); waiting?.(what) }
  const handlers: ChannelHandlers = { notified: payload => record(`notified ${payload}`), listening: () => record('listening'), lost: () => record('lost') }
  return { told, handlers, next: () => new Promise<string>(resolve => { waiting = resolve }) }
}

t.test('listens on each channel asked for, on one connection, and again after losing it', async t => {
  const config = await createDatabase(t)
  const pool = testPool(config)
  t.teardown(() => pool.end())
  const { warned, log } = logger()
  const listener = new NotificationListener(config as pg.ClientConfig, log)
  t.teardown(() => listener.stop())
  t.throws(() => listener.listen('drop table x', recorder().handlers), /Not a channel name/)

  const first = recorder()
  await listener.listen('first', first.handlers)
  t.same(first.told, ['listening'])
  const second = recorder()
  await listener.listen('second', second.handlers)
  t.same(second.told, ['listening'], 'a second channel on the connection already up')
  const { rows } = await pool.query('select count(*)::int as n from pg_stat_activity where application_name = $1 and datname = current_database()', [LISTENER_NAME])
  t.equal(rows[0].n, 1, 'one connection')

  let next = second.next()
  await pool.query('select pg_notify(\'second\', \'hello\')')
  t.equal(await next, 'notified hello')

  // Lost: each channel is told, and listening again a second later.
  next = first.next()
  await pool.query('select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1 and datname = current_database()', [LISTENER_NAME])
  t.equal(await next, 'lost')
  t.equal(warned.length, 1, 'the loss is warned of')
  // A channel asked for while lost is listened on by the next connection.
  const third = recorder()
  await listener.listen('third', third.handlers)
  t.same(third.told, [], 'not yet')
  next = third.next()
  t.equal(await next, 'listening', 'on the next connection')
  t.equal(first.told.at(-1), 'listening')
  next = first.next()
  await pool.query('select pg_notify(\'first\', \'again\')')
  t.equal(await next, 'notified again')

  await listener.stop()
  t.equal(first.told.at(-1), 'lost', 'stopped: no longer listening')
  await listener.listen('fourth', recorder().handlers)
  const after = await pool.query('select count(*)::int as n from pg_stat_activity where application_name = $1 and datname = current_database()', [LISTENER_NAME])
  t.equal(after.rows[0].n, 0, 'and connects no more')
})

t.test('stopped while it connects, it does not try again', async t => {
  // A server that takes connections and says nothing, until the test drops them.
  const sockets: net.Socket[] = []
  const server = net.createServer(socket => sockets.push(socket))
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const { port } = server.address() as net.AddressInfo
  const { warned, log } = logger()
  const listener = new NotificationListener({ host: '127.0.0.1', port, user: 'nobody', database: 'none' }, log)
  const channel = recorder()
  const listening = listener.listen('first', channel.handlers)
  while (sockets.length === 0) await new Promise(resolve => setTimeout(resolve, 10))
  const stopped = listener.stop()
  for (const socket of sockets) socket.destroy()
  await Promise.all([stopped, listening])
  await new Promise(resolve => setTimeout(resolve, 1_200))
  t.equal(sockets.length, 1, 'no second connection')
  t.notOk(channel.told.includes('listening'))
  t.equal(warned.length, 0, 'nothing to warn of: it was stopped')
})
