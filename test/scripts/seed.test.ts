import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import t from 'tap'
import { buildApp, createDatabase, testConfig, TEST_JWT_SECRET } from '../helper.js'

const run = promisify(execFile)

t.test('npm run seed: demo students, varied and plausible, on a database it migrates first; a second run adds none, a larger count the rest', async t => {
  const db = await createDatabase(t)
  const env = { ...process.env, JWT_SECRET: TEST_JWT_SECRET, DB_HOST: db.host, DB_PORT: String(db.port), DB_NAME: db.database, DB_USER: db.user, DB_PASSWORD: db.password }
  const seed = (...args: string[]) => run(process.execPath, [...process.execArgv, 'scripts/seed.ts', ...args], { env })

  t.match((await seed('--students', '1500')).stdout, /^Added 1,500 demo students \(0 of the 1,500 were there already\); the database holds 1,500 students$/m)
  const app = await buildApp(t, testConfig(db))
  const page = await app.inject({ url: '/students?limit=100&count=exact' })
  t.equal(page.headers['x-total-count'], '1500', 'the service serves them')
  const body = page.json()
  const students: { name: string, email: string, age: number, dob: string }[] = Array.isArray(body) ? body : body.data
  t.ok(new Set(students.map(student => student.name)).size > 80, 'names vary')
  t.ok(new Set(students.map(student => student.dob)).size > 80, 'so do dates of birth')
  const inAddress = (name: string) => name.normalize('NFD').replace(/[^A-Za-z]/g, '').toLowerCase()
  // The age within a year of the date of birth's: the database's today may be another day than this process's, at midnight.
  const implausible = students.filter(({ name, email, age, dob }) => {
    const [first, ...last] = name.split(' ') as [string, ...string[]]
    const years = (Date.now() - Date.parse(dob)) / (365.25 * 86_400_000)
    return !new RegExp(`^${inAddress(first)}\\.${inAddress(last.join(''))}\\.\\d+@example\\.(com|org|net)$`).test(email) || Math.abs(age - years) > 1 || age < 16 || age > 67
  })
  t.same(implausible, [], 'each address is its student\'s, at a reserved example domain; each age that of the date of birth, 16 to 67')

  t.match((await seed('--students', '1500')).stdout, /^Added 0 demo students \(1,500 of the 1,500 were there already\); the database holds 1,500 students$/m, 'run again: nothing added')
  t.match((await seed()).stdout, /^Added 0 demo students \(1,000 of the 1,000 were there already\); the database holds 1,500 students$/m, '1,000 unless told')
  t.match((await seed('--students', '2000')).stdout, /^Added 500 demo students \(1,500 of the 2,000 were there already\); the database holds 2,000 students$/m, 'a larger count adds the rest')

  for (const bad of [['--students', '0'], ['--students', 'many'], ['--students', '10000001'], ['--pupils', '3']]) {
    const refused = await seed(...bad).catch((error: { code: number, stderr: string }) => error)
    t.match(refused, { code: 2, stderr: /Usage: npm run seed -- \[--students N\]/ }, `${bad.join(' ')}: refused`)
  }
})
