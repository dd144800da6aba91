// The peer: the same routes built the way most tutorials build them, Express 5 and plain pg queries.
import express from 'express'
import { pool, SQL } from './sql.js'

const db = pool()
const app = express()
app.use(express.json())

app.get('/students/:id', async (req, res) => {
  const { rows } = await db.query(SQL.byId, [Number(req.params.id), 1])
  if (!rows[0]) return res.status(404).json({ message: 'not found' })
  res.json(rows[0])
})

app.get('/students', async (req, res) => {
  const limit = Number(req.query.limit ?? 100)
  const { rows } = await db.query(SQL.page, [Number(req.query.after ?? 0), limit + 1])
  res.json(rows.slice(0, limit))
})

app.post('/students', async (req, res) => {
  const { name, email, age, dob } = req.body
  const { rows } = await db.query(SQL.insert, [age, dob, email, name])
  res.status(201).location(`/students/${rows[0].id}`).json(rows[0])
})

const server = app.listen(Number(process.env.PORT), '127.0.0.1')
process.on('SIGTERM', () => server.close(() => db.end().then(() => process.exit(0))))
