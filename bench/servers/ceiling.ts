// The ceiling: node:http and a pg Pool, named prepared statements, JSON.stringify, no framework.
import { createHmac, randomUUID } from 'node:crypto'
import http from 'node:http'
import { emailKey } from '../../lib/auth/email.js'
import { Passwords } from '../../lib/auth/passwords.js'
import { AUDIENCE, ISSUER } from '../../plugins/app/auth.js'
import { readJson, send } from './http.js'
import { pool, SQL } from './sql.js'

const db = pool()
const passwords = new Passwords()
await passwords.prepare()

// Login's token, signed as bare as it gets: HS256 over a fixed header and the service's claims
// (a session's id among them, though the ceiling starts no session: a token of the same size).
const base64url = (text: string) => Buffer.from(text).toString('base64url')
const JWT_HEADER = base64url('{"alg":"HS256","typ":"JWT"}')
function token (user: { id: number }) {
  const iat = Math.floor(Date.now() / 1000)
  const claims = base64url(JSON.stringify({ sub: String(user.id), jti: randomUUID(), sid: 1, iat, exp: iat + 3600, iss: ISSUER, aud: AUDIENCE }))
  const signature = createHmac('sha256', process.env.JWT_SECRET!).update(`${JWT_HEADER}.${claims}`).digest('base64url')
  return `${JWT_HEADER}.${claims}.${signature}`
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
      const { name, email, age, dob } = await readJson(req)
      const { rows } = await db.query({ name: 'insert', text: SQL.insert, values: [age, dob, email, name] })
      res.setHeader('location', `/students/${rows[0].id}`)
      return send(res, 201, rows[0])
    }
    // Login as the service hashes it (the same threads), without its rate limit.
    if (req.method === 'POST' && url.pathname === '/api/login') {
      const { email, password } = await readJson(req)
      const { rows: [user] } = await db.query({ name: 'credentials', text: SQL.credentials, values: [emailKey(email), 1] })
      if (!await passwords.verify(user?.password, password, () => req.socket.destroyed)) return send(res, 401, { message: 'unauthorized' })
      return send(res, 200, { success: true, data: token(user) })
    }
    send(res, 404, { message: 'not found' })
  } catch (error) {
    send(res, 500, { message: String(error) })
  }
})
server.listen(Number(process.env.PORT), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => db.end().then(() => process.exit(0))))
