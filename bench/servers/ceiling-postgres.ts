// The second ceiling: node:http and postgres.js (the fastest Node driver; its queries are
// prepared statements), the same SQL and JSON as the service's, no framework. Student routes only.
import http from 'node:http'
import postgres from 'postgres'
import { isoTimestamp } from '../../lib/db/pg-types.js'
import { readJson, send } from './http.js'
import { connection, SQL } from './sql.js'

const { user, ...database } = connection()
const sql = postgres({
  ...database,
  username: user,
  // The service's session: timestamps in UTC, dates as YYYY-MM-DD.
  connection: { TimeZone: 'UTC', DateStyle: 'ISO' },
  // Dates stay their text and timestamps become ISO 8601 strings, as the service writes them.
  types: {
    date: { to: 1082, from: [1082], serialize: (value: string) => value, parse: (value: string) => value },
    timestamptz: { to: 1184, from: [1184], serialize: (value: string) => value, parse: isoTimestamp }
  },
  fetch_types: false
})

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url!, 'http://localhost')
    const byId = /^\/students\/(\d+)$/.exec(url.pathname)
    if (req.method === 'GET' && byId) {
      const [row] = await sql.unsafe(SQL.byId, [Number(byId[1]), 1], { prepare: true })
      return row ? send(res, 200, row) : send(res, 404, { message: 'not found' })
    }
    if (req.method === 'GET' && url.pathname === '/students') {
      const limit = Number(url.searchParams.get('limit') ?? 100)
      const rows = await sql.unsafe(SQL.page, [Number(url.searchParams.get('after') ?? 0), limit + 1], { prepare: true })
      return send(res, 200, rows.slice(0, limit))
    }
    if (req.method === 'POST' && url.pathname === '/students') {
      const { name, email, age, dob } = await readJson(req)
      const [row] = await sql.unsafe(SQL.insert, [age, dob, email, name], { prepare: true })
      res.setHeader('location', `/students/${row!.id}`)
      return send(res, 201, row)
    }
    send(res, 404, { message: 'not found' })
  } catch (error) {
    send(res, 500, { message: String(error) })
  }
})
server.listen(Number(process.env.PORT), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => sql.end().then(() => process.exit(0))))
