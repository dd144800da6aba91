import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { socketPath } from '../../../lib/db/socket-path.js'

t.test('a socket goes inside DATA_DIR, so that nothing is written elsewhere', async t => {
  t.equal(socketPath('/data', 'server.lock'), '/data/server.lock')
  t.equal(socketPath('/data', 'sockets', '/.s.PGSQL.5432'), '/data/sockets')
})

t.test('a DATA_DIR too deep for a socket\'s path puts it in the system\'s temporary folder, named after DATA_DIR', async t => {
  const deep = path.join('/srv', 'a'.repeat(90))
  const lock = socketPath(deep, 'server.lock')
  t.equal(path.dirname(lock), os.tmpdir())
  t.match(path.basename(lock), /^student-records-[0-9a-f]{12}-server\.lock$/)
  t.equal(socketPath(deep, 'server.lock'), lock, 'the same folder gets the same place')
  t.not(socketPath(`${deep}b`, 'server.lock'), lock, 'another folder, another place')
  // The folder alone would fit; the socket PostgreSQL puts in it would not.
  const edge = path.join('/srv', 'b'.repeat(80))
  t.equal(socketPath(edge, 'sockets'), path.join(edge, 'sockets'))
  t.equal(path.dirname(socketPath(edge, 'sockets', '/.s.PGSQL.5432')), os.tmpdir())
})
