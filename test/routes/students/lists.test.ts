import t, { type Test } from 'tap'
import type { FastifyInstance } from 'fastify'
import { build } from '../../helper.js'

interface Student { id: number, name: string, email: string, age: number, dob: string, created_at: string }

const PEOPLE = [
  { name: 'Ada Lovelace', age: 36, dob: '1815-12-10' },
  { name: 'Grace Hopper', age: 85, dob: '1906-12-09' },
  { name: 'Alan Turing', age: 41, dob: '1912-06-23' },
  { name: 'Edsger Dijkstra', age: 72, dob: '1930-05-11' },
  { name: 'Barbara Liskov', age: 18, dob: '1939-11-07' },
  { name: 'adam 100%_sure', age: 29, dob: '1990-01-01' },
  { name: 'Ada Yonath', age: 29, dob: '1939-06-22' }
]

async function seed (app: FastifyInstance): Promise<Student[]> {
  const students: Student[] = []
  for (const [i, person] of PEOPLE.entries()) {
    const res = await app.inject({ method: 'POST', url: '/students', payload: { ...person, email: `p${i}@Example.com` } })
    students.push(res.json())
  }
  return students
}

const get = async (app: FastifyInstance, url: string) => {
  const res = await app.inject({ url })
  return { status: res.statusCode, body: res.json(), headers: res.headers }
}
const names = (body: Student[]) => body.map(student => student.name)

/** Every page of a list, following its `Link` headers. */
async function allPages (t: Test, app: FastifyInstance, url: string): Promise<Student[]> {
  const rows: Student[] = []
  let next: string | undefined = url
  while (next) {
    const res = await get(app, next)
    t.equal(res.status, 200, next)
    rows.push(...res.body)
    next = /<([^>]+)>; rel="next"/.exec(String(res.headers.link ?? ''))?.[1]
  }
  return rows
}

t.test('filters, in the deepObject style, on both variants', async t => {
  const app = await build(t)
  const students = await seed(app)
  for (const base of ['/students', '/api/v1/students']) {
    t.test(`${base}: each operator keeps the records it names`, async t => {
      t.same(names((await get(app, `${base}?age[gte]=29&age[lt]=41`)).body), ['Ada Lovelace', 'adam 100%_sure', 'Ada Yonath'], 'a range, both ends')
      t.same(names((await get(app, `${base}?age[eq]=29`)).body), ['adam 100%_sure', 'Ada Yonath'], 'eq')
      t.same((await get(app, `${base}?age[ne]=29`)).body.length, 5, 'ne')
      t.same(names((await get(app, `${base}?age[gt]=72`)).body), ['Grace Hopper'], 'gt')
      t.same(names((await get(app, `${base}?age[lte]=18`)).body), ['Barbara Liskov'], 'lte')
      t.same(names((await get(app, `${base}?name[contains]=ADA`)).body), ['Ada Lovelace', 'adam 100%_sure', 'Ada Yonath'], 'contains, in any case')
      t.same(names((await get(app, `${base}?name[starts_with]=ada%20`)).body), ['Ada Lovelace', 'Ada Yonath'], 'starts_with, in any case')
      t.same(names((await get(app, `${base}?name[contains]=0%25_`)).body), ['adam 100%_sure'], '% and _ match themselves')
      t.same(names((await get(app, `${base}?name[contains]=%25`)).body), ['adam 100%_sure'], 'a lone % is no wildcard')
      t.same(names((await get(app, `${base}?email[eq]=p1@Example.com`)).body), ['Grace Hopper'], 'email eq')
      t.same(names((await get(app, `${base}?id[in]=${students[2]!.id},${students[4]!.id},999999`)).body), ['Alan Turing', 'Barbara Liskov'], 'in, comma-separated')
      t.same(names((await get(app, `${base}?dob[lt]=1910-01-01`)).body), ['Ada Lovelace', 'Grace Hopper'], 'a date')
      t.same(names((await get(app, `${base}?age[gte]=29&name[starts_with]=ada`)).body), ['Ada Lovelace', 'adam 100%_sure', 'Ada Yonath'], 'several fields combine with AND')
      t.same(names((await get(app, `${base}?age%5Beq%5D=85`)).body), ['Grace Hopper'], 'brackets percent-encoded')
    })
  }

  t.test('a record\'s timestamp as shown finds it; gt that value leaves it out', async t => {
    // A millisecond of their own each, stored to the microsecond as PostgreSQL stores now().
    for (const [i, student] of students.entries()) {
      await app.knex('students').where({ id: student.id }).update({ created_at: `2026-01-0${i + 1}T00:00:00.123456Z` })
    }
    const shown = (await get(app, `/students/${students[3]!.id}`)).body.created_at
    t.equal(shown, '2026-01-04T00:00:00.123Z', 'shown to the millisecond')
    t.same(names((await get(app, `/students?created_at[eq]=${shown}`)).body), ['Edsger Dijkstra'])
    t.notOk(names((await get(app, `/students?created_at[gt]=${shown}`)).body).includes('Edsger Dijkstra'))
    t.ok(names((await get(app, `/students?created_at[lte]=${shown}`)).body).includes('Edsger Dijkstra'))
    t.notOk(names((await get(app, `/students?created_at[ne]=${shown}`)).body).includes('Edsger Dijkstra'))
    t.same(names((await get(app, `/students?created_at[in]=${shown},2001-01-01T00:00:00Z`)).body), ['Edsger Dijkstra'])
    t.same(names((await get(app, `/students?created_at[gte]=${shown}&created_at[lt]=2026-01-05T00:00:00.123Z`)).body), ['Edsger Dijkstra'], 'gte and lt: from its millisecond up to the next record\'s')
  })
})

t.test('sorting, with ties in id order, over every page', async t => {
  const app = await build(t)
  const students = await seed(app)
  const byId = (a: Student, b: Student) => a.id - b.id

  t.test('descending date of birth, two a page', async t => {
    const rows = await allPages(t, app, '/students?sort=-dob&limit=2')
    t.same(rows.map(s => s.id), [...students].sort((a, b) => b.dob.localeCompare(a.dob) || b.id - a.id).map(s => s.id))
  })
  t.test('age, then name descending, one a page', async t => {
    const rows = await allPages(t, app, '/api/v1/students?sort=age,-name&limit=1')
    t.same(rows.map(s => s.id), [...students].sort((a, b) => a.age - b.age || (a.name < b.name ? 1 : a.name > b.name ? -1 : 0) || byId(a, b)).map(s => s.id))
  })
  t.test('ties on age follow in id order', async t => {
    const rows = await allPages(t, app, '/students?sort=age&age[eq]=29&limit=1')
    t.same(rows.map(s => s.id), students.filter(s => s.age === 29).map(s => s.id).sort((a, b) => a - b))
  })
  t.test('a filtered, sorted list\'s next link keeps its filters and carries a cursor', async t => {
    const res = await get(app, '/students?age[gte]=20&sort=-age&count=exact&limit=2&_=cache-buster')
    t.same(names(res.body), ['Grace Hopper', 'Edsger Dijkstra'])
    t.match(res.headers.link, /^<\/students\?age\[gte\]=20&sort=-age&limit=2&cursor=[\w-]+>; rel="next"$/, 'the list\'s own parameters, and no others')
  })
  t.test('sort=-id is id order, backwards', async t => {
    const rows = await allPages(t, app, '/students?sort=-id&limit=3')
    t.same(rows.map(s => s.id), students.map(s => s.id).reverse())
  })
})

t.test('counts, only when asked', async t => {
  const app = await build(t)
  await seed(app)
  const plain = await get(app, '/students?limit=2')
  t.equal(plain.headers['x-total-count'], undefined, 'no count unless asked')
  const exact = await get(app, '/students?limit=2&count=exact&age[gte]=29')
  t.equal(exact.headers['x-total-count'], '6', 'exact: every record matching, not the page')
  t.equal(exact.body.length, 2)
  const whole = await get(app, '/api/v1/students?count=estimated')
  t.equal(whole.headers['x-total-count'], '7', 'estimated, when the first page holds them all: exact')
  t.equal((await get(app, '/students?count=estimated&after=0')).headers['x-total-count'], '7', 'after=0 is the first page')
  const estimated = await get(app, '/api/v1/students?count=estimated&limit=2')
  t.equal(estimated.headers['x-total-count'], '7', 'estimated, with more pages, below 10,000: counted')
  const later = await get(app, `/students?count=estimated&limit=2&after=${(await get(app, '/students?limit=1')).body[0].id}`)
  t.equal(later.headers['x-total-count'], '7', 'estimated on a later page: the whole list\'s')
  const counted = await get(app, '/students?count=exact&&limit=2')
  t.match(counted.headers.link, /^<\/students\?limit=2&after=\d+>; rel="next"$/, 'a counted plain list links on with after, without counting again')
  const none = await get(app, '/students?count=exact&name[eq]=nobody')
  t.equal(none.headers['x-total-count'], '0')
})

t.test('bad filters, sorts and cursors are 400 naming the parameter; plain unknown parameters are ignored', async t => {
  const app = await build(t)
  const students = await seed(app)
  const bad: [string, string][] = [
    ['age[gte]=old', 'age[gte]'],
    ['age[gte]=1e3', 'age[gte]'],
    ['age[gte]=2147483648', 'age[gte]'],
    ['dob[eq]=1815-13-10', 'dob[eq]'],
    ['dob[eq]=0000-01-01', 'dob[eq]'],
    ['created_at[gt]=yesterday', 'created_at[gt]'],
    ['age[between]=1', 'age[between]'],
    ['age[contains]=3', 'age[contains]'],
    ['colour[eq]=red', 'colour'],
    ['id[in]=1,x', 'id[in]'],
    [`id[in]=${Array.from({ length: 101 }, (_, i) => i).join(',')}`, 'id[in]'],
    ['name[eq][deeper]=x', 'name[eq]'],
    ['name[eq]=a%00b', 'name[eq]'],
    ['sort=colour', 'sort[0]'],
    ['sort=email', 'sort[0]'],
    ['sort=name,name', 'sort'],
    ['sort=name,-name', 'sort'],
    ['created_at[gte]=2026-01-01T00:00:00%2B16:00', 'created_at[gte]'],
    ['created_at[eq]=2026-01-01%C2%A000:00:00Z', 'created_at[eq]'],
    [`created_at[lt]=2026-01-01T00:00:00.${'0'.repeat(200)}Z`, 'created_at[lt]'],
    ['created_at[in]=2026-01-01T00:00:00Z,0000-01-01T00:00:00Z', 'created_at[in]'],
    ['count=roughly', 'count'],
    ['sort=name&after=3', 'after'],
    ['cursor=abc', 'cursor'],
    ['after=3&cursor=abcdefghijklmnopqrstuvwxyz0123456789', 'cursor'],
    ['id[__proto__]=1', 'id[__proto__?]'],
    ['__proto__[eq]=1', '__proto__?'],
    ['cursor=$$$', 'cursor']
  ]
  for (const [query, parameter] of bad) {
    const res = await app.inject({ url: `/students?${query}` })
    t.equal(res.statusCode, 400, query)
    t.match(res.json(), { success: false, statusCode: 400, data: { [parameter]: [String] } }, `${query} names ${parameter}`)
  }
  const listed: [string, string][] = [
    ['id[in]=1,x', 'value 2 must be integer'],
    ['id[in]=1,1e3', 'value 2 must be integer'],
    ['id[in]=1,2147483648', 'value 2 must be <= 2147483647'],
    ['dob[in]=2000-01-01,2000-02-30', 'value 2 must match format "date"'],
    [`id[in]=${Array.from({ length: 101 }, (_, i) => i).join(',')}`, 'must have at most 100 values']
  ]
  for (const [query, problem] of listed) {
    const res = await app.inject({ url: `/students?${query}` })
    t.same(res.json().data, { [query.slice(0, query.indexOf('='))]: [problem] }, `${query.slice(0, 40)}: ${problem}`)
  }
  const ignored = await get(app, '/students?colour=red&utm_source=x&_=1&_=2')
  t.equal(ignored.status, 200, 'plain unknown parameters are ignored')
  t.equal(ignored.body.length, students.length)
})

t.test('a cursor holds for the filters and sort it was made for only', async t => {
  const app = await build(t)
  await seed(app)
  const first = await get(app, '/students?sort=name&age[gte]=20&limit=2')
  const cursor = /cursor=([\w-]+)/.exec(String(first.headers.link))![1]!
  t.equal((await get(app, `/students?sort=name&age[gte]=20&limit=2&cursor=${cursor}`)).status, 200, 'the same filters and sort, as the link has them')
  t.equal((await get(app, `/students?age[gte]=20&limit=5&sort=name&cursor=${cursor}`)).status, 200, 'in another order, and another limit')
  for (const other of ['sort=-name&age[gte]=20', 'sort=name&age[gte]=21', 'sort=name', 'age[gte]=20']) {
    const res = await get(app, `/students?${other}&cursor=${cursor}`)
    t.equal(res.status, 400, other)
    t.match(res.body, { data: { cursor: [String] } })
  }
  t.equal((await get(app, `/api/v1/students?sort=name&age[gte]=20&cursor=${cursor}`)).status, 400, 'on another list')
  const tampered = cursor.slice(0, 3) + (cursor[3] === 'A' ? 'B' : 'A') + cursor.slice(4)
  t.equal((await get(app, `/students?sort=name&age[gte]=20&cursor=${tampered}`)).status, 400, 'an altered cursor')
  // The last character of each base64url part carries bits that decoding drops.
  const last = cursor.at(-1)!
  const sameBytes = cursor.slice(0, -1) + String.fromCharCode(last.charCodeAt(0) ^ 1)
  t.equal((await get(app, `/students?sort=name&age[gte]=20&cursor=${sameBytes}`)).status, 400, 'a cursor altered only in bits that decoding drops')
})

t.test('a next link holds the list\'s parameters as sent, encoded, and nothing a client could break on', async t => {
  const app = await build(t)
  await seed(app)
  const res = await get(app, '/students?sort=name&limit=1&name[contains]=a%22%3E%3B%20rel%3D%22prev&junk=%3C%3E&utm=1')
  t.same(res.body.length, 0, 'no such name')
  const page = await get(app, '/students?sort=name&limit=1&name[contains]=a&x=%22%3E%3Crel')
  const link = String(page.headers.link)
  t.match(link, /^<\/students\?name\[contains\]=a&sort=name&limit=1&cursor=[\w-]+>; rel="next"$/, 'unknown parameters left out')
  const chosen = (await get(app, '/students?limit=3')).body.map((student: Student) => student.id)
  const listed = await get(app, `/students?id[in]=${chosen.join(',')}&limit=2`)
  t.match(listed.headers.link, new RegExp(`^</students\\?id\\[in\\]=${chosen.join('%2C')}&limit=2&cursor=[\\w-]+>; rel="next"$`), 'a filter\'s list of values carried on, in id order')
  const rest = await get(app, /<([^>]+)>/.exec(String(listed.headers.link))![1]!)
  t.same(rest.body.map((student: Student) => student.id), [chosen[2]], 'and followed')
  const raw = await app.inject({ url: '/students?sort=name&limit=1&name[ne]="<>%' })
  t.equal(raw.statusCode, 200)
  t.match(raw.headers.link, /^<\/students\?name\[ne\]=[\w%]+&sort=name&limit=1&cursor=[\w-]+>; rel="next"$/, 'quotes, angle brackets and a stray % encoded')
  const next = await app.inject({ url: /<([^>]+)>/.exec(String(raw.headers.link))![1]! })
  t.equal(next.statusCode, 200, `and the link works: ${next.body.slice(0, 300)}`)
})

t.test('an estimated count is kept for its list and filters, the oldest of a thousand dropped first', async t => {
  const app = await build(t)
  // Past 10,000 rows, where the planner's estimate is answered.
  await app.knex.raw(`insert into students (name, email, age, dob)
    select 'Many ' || i, 'many' || i || '@example.com', 20, date '2000-01-01' from generate_series(1, 10000) i`)
  await app.knex.raw('analyze students')
  const count = async (url: string) => (await get(app, url)).headers['x-total-count']
  t.equal(await count('/students?count=estimated&limit=1'), '10000', 'the planner\'s estimate of an analyzed table')
  // A filter matching none of an analyzed list of 10,000, on a page after the first (a first
  // page holding every match is counted from itself): the planner's 1 is answered, not a count
  // that would read the whole list to find nothing.
  t.equal(await count('/students?count=estimated&limit=1&name[eq]=nobody&after=1'), '1', 'a large list: the planner\'s estimate, even below 10,000')
  t.equal(await count('/students?count=exact&limit=1&name[eq]=nobody&after=1'), '0')
  await app.knex.raw(`insert into students (name, email, age, dob)
    select 'More ' || i, 'more' || i || '@example.com', 20, date '2000-01-01' from generate_series(1, 500) i`)
  await app.knex.raw('analyze students')
  t.equal(await count('/students?count=estimated&limit=1'), '10000', 'the same estimate while it is kept')
  for (let i = 1; i <= 1000; i++) await app.inject({ url: `/students?count=estimated&limit=1&age[gte]=-${i}` })
  t.equal(await count('/students?count=estimated&limit=1'), '10500', 'dropped for a thousand others: the planner asked again')
})

t.test('on a table never analyzed, an estimated count of a few rows is exact, not the planner\'s guess', async t => {
  const app = await build(t)
  await app.knex.raw('alter table students set (autovacuum_enabled = false)')
  const ids: number[] = []
  for (const [i, person] of PEOPLE.slice(0, 6).entries()) {
    ids.push((await app.inject({ method: 'POST', url: '/students', payload: { ...person, email: `six${i}@example.com` } })).json().id)
  }
  const plan = await app.knex.raw('explain (format json) select 1 from students')
  t.not(plan.rows[0]['QUERY PLAN'][0].Plan['Plan Rows'], 6, 'the planner guesses from the table\'s pages')
  const first = await get(app, '/students?limit=2&count=estimated')
  t.match(first.headers.link, /rel="next"/)
  t.equal(first.headers['x-total-count'], '6', 'a first page with more to come: the six')
  const later = await get(app, `/students?limit=2&count=estimated&after=${ids[1]}`)
  t.equal(later.headers['x-total-count'], '6', 'a later page: the six')
  const filtered = await get(app, '/students?limit=1&count=estimated&age[gte]=30&sort=name')
  t.equal(filtered.headers['x-total-count'], '4', 'a filtered list: those matching')
})

t.test('statistics far below the rows: an estimated count says at least 10,000', async t => {
  const app = await build(t)
  // Statistics taken when the table held one row, and not since: the planner estimates a few hundred.
  await app.knex.raw('alter table students set (autovacuum_enabled = false)')
  await app.inject({ method: 'POST', url: '/students', payload: { ...PEOPLE[0], email: 'first@example.com' } })
  await app.knex.raw('analyze students')
  await app.knex.raw(`insert into students (name, email, age, dob)
    select 'Many ' || i, 'many' || i || '@example.com', 20, date '2000-01-01' from generate_series(1, 12000) i`)
  const plan = await app.knex.raw('explain (format json) select 1 from students')
  t.ok(plan.rows[0]['QUERY PLAN'][0].Plan['Plan Rows'] < 10_000, 'the planner\'s estimate is stale')
  const page = await get(app, '/students?limit=5&count=estimated')
  t.equal(page.headers['x-total-count'], '10000', 'counted up to 10,000, and no further')
  t.equal((await get(app, '/students?limit=5&count=exact')).headers['x-total-count'], '12001', 'exact counts them all')
})
