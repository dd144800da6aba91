// The ceiling: node:http and a pg Pool, named prepared statements, JSON.stringify, no framework.
import http from 'node:http'
import { pool, SQL } from './sql.js'

const db = pool()

function send (res: http.ServerResponse, status: number, body: unknown) {
  const json = JSON.stringify(body)
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(json) })
  res.end(json)
}

const server = http.createServer(async (req, res) => {
  try {
    const url = new URL(req.url!, 'http://localhost')
    const byId = /^\/students\/(\d+)$/.exec(url.pathname)
    if (req.method === 'GET' && byId) {
      const { rows } = await db.query({ name: 'by-id', text: SQL.byId, values: [Number(byId[1]), 1] })
      return rows[0] ? send(res, 200, rows[0]) : send(res, 404, { message: 'not found' })
    }
    if (req.method === 'GET' && url.pathname === '/students') {
      const limit = Number(url.searchParams.get('limit') ?? 100)
      const { rows } = await db.query({ name: 'page', text: SQL.page, values: [Number(url.searchParams.get('after') ?? 0), limit + 1] })
      return send(res, 200, rows.slice(0, limit))
    }
    if (req.method === 'POST' && url.pathname === '/students') {
      let body = ''
      for await (const chunk of req) body += chunk
      const { name, email, age, dob } = JSON.parse(body)
      const { rows } = await db.query({ name: 'insert', text: SQL.insert, values: [age, dob, email, name] })
      res.setHeader('location', `/students/${rows[0].id}`)
      return send(res, 201, rows[0])
    }
    send(res, 404, { message: 'not found' })
  } catch (error) {
    send(res, 500, { message: String(error) })
  }
})
server.listen(Number(process.env.PORT), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => db.end().then(() => process.exit(0))))
