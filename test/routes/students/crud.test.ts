import t from 'tap'
import { build } from '../../helper.js'
import { ada, student, variants } from './fixtures.js'

const ISO_UTC = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/

for (const { name, base } of variants) {
  t.test(`${name}: create, read, list, delete`, async t => {
    const app = await build(t)
    let body: { id: number, created_at: string, updated_at: string }
    let location: string

    await t.test('POST creates the student, answered 201 with its timestamps and location', async t => {
      const created = await app.inject({ method: 'POST', url: base, payload: ada })
      t.equal(created.statusCode, 201)
      body = created.json()
      t.match(body, { ...ada, id: Number })
      t.match(body.created_at, ISO_UTC)
      t.equal(body.updated_at, body.created_at)
      t.equal(created.headers.location, `${base}/${body.id}`)
      location = created.headers.location as string
    })

    await t.test('GET at its location shows it', async t => {
      const shown = await app.inject({ method: 'GET', url: location })
      t.equal(shown.statusCode, 200)
      t.same(shown.json(), body)
    })

    await t.test('HEAD answers 200 with no body', async t => {
      const head = await app.inject({ method: 'HEAD', url: `${base}/${body.id}` })
      t.equal(head.statusCode, 200)
      t.equal(head.body, '')
    })

    await t.test('the list holds it, with no next page', async t => {
      const list = await app.inject({ method: 'GET', url: base })
      t.equal(list.statusCode, 200)
      t.same(list.json(), [body])
      t.notOk(list.headers.link, 'no next page')
    })

    await t.test('DELETE answers 204 with no body', async t => {
      const deleted = await app.inject({ method: 'DELETE', url: `${base}/${body.id}` })
      t.equal(deleted.statusCode, 204)
      t.equal(deleted.body, '')
    })

    await t.test('a deleted student is 404 to GET, naming it, and to DELETE', async t => {
      const gone = await app.inject({ method: 'GET', url: `${base}/${body.id}` })
      t.equal(gone.statusCode, 404)
      t.same(gone.json(), { success: false, statusCode: 404, error: 'Not Found', code: 'not_found', message: `Student ${body.id} not found` })

      const again = await app.inject({ method: 'DELETE', url: `${base}/${body.id}` })
      t.equal(again.statusCode, 404)
    })
  })

  t.test(`${name}: an id with no record is 404 on every route`, async t => {
    const app = await build(t)
    for (const id of [1, 2147483647, 2147483648, 99999999999999]) {
      for (const method of ['GET', 'PUT', 'DELETE'] as const) {
        const res = await app.inject({ method, url: `${base}/${id}`, payload: method === 'PUT' ? { name: 'X' } : undefined })
        t.equal(res.statusCode, 404, `${method} ${id}`)
        t.equal(res.json().message, `Student ${id} not found`)
      }
    }
  })

  t.test(`${name}: pages with limit and after, linking to the next page`, async t => {
    const app = await build(t)
    const ids: number[] = []
    for (let n = 0; n < 5; n++) {
      ids.push((await app.inject({ method: 'POST', url: base, payload: student(n) })).json().id)
    }

    await t.test('the first page of two links to the next', async t => {
      const first = await app.inject({ method: 'GET', url: `${base}?limit=2` })
      t.same(first.json().map((s: { id: number }) => s.id), ids.slice(0, 2))
      t.equal(first.headers.link, `<${base}?limit=2&after=${ids[1]}>; rel="next"`)
    })

    await t.test('the pages after follow on; the last links nowhere', async t => {
      const second = await app.inject({ method: 'GET', url: `${base}?limit=2&after=${ids[1]}` })
      t.same(second.json().map((s: { id: number }) => s.id), ids.slice(2, 4))

      const last = await app.inject({ method: 'GET', url: `${base}?limit=2&after=${ids[3]}` })
      t.same(last.json().map((s: { id: number }) => s.id), ids.slice(4))
      t.notOk(last.headers.link)
    })

    await t.test('without a limit, all five are listed', async t => {
      const whole = await app.inject({ method: 'GET', url: base })
      t.equal(whole.json().length, 5, 'default limit of 100 returns all five')
    })

    await t.test('a limit out of range or an after that is no id is 400', async t => {
      for (const query of ['limit=0', 'limit=1001', 'limit=abc', 'after=-1', 'after=x']) {
        const res = await app.inject({ method: 'GET', url: `${base}?${query}` })
        t.equal(res.statusCode, 400, query)
        t.equal(res.json().success, false)
      }
    })
  })

  t.test(`${name}: e-mail addresses are unique without regard to case`, async t => {
    const app = await build(t)
    t.equal((await app.inject({ method: 'POST', url: base, payload: ada })).statusCode, 201)
    const dup = await app.inject({ method: 'POST', url: base, payload: { ...ada, email: 'ADA@Example.COM' } })
    t.equal(dup.statusCode, 409)
    t.same(dup.json(), {
      success: false, statusCode: 409, error: 'Conflict', code: 'email_taken', message: 'A student with e-mail ADA@Example.COM already exists'
    })
    t.equal((await app.inject({ method: 'GET', url: base })).json().length, 1)
  })
}

t.test('variant A: PUT changes the name only', async t => {
  const app = await build(t)
  const { id, updated_at: before } = (await app.inject({ method: 'POST', url: '/api/v1/students', payload: ada })).json()

  const res = await app.inject({ method: 'PUT', url: `/api/v1/students/${id}`, payload: { name: 'Augusta Ada King' } })
  t.equal(res.statusCode, 200)
  t.match(res.json(), { ...ada, id, name: 'Augusta Ada King' })
  t.ok(res.json().updated_at > before, 'updated_at moves on')

  const patch = await app.inject({ method: 'PATCH', url: `/api/v1/students/${id}`, payload: { name: 'X' } })
  t.equal(patch.statusCode, 405, 'variant A has no PATCH')
  t.equal(patch.headers.allow, 'GET, HEAD, PUT, DELETE')
})

t.test('variant B: PUT and PATCH change any non-empty subset of the fields', async t => {
  const app = await build(t)
  const { id } = (await app.inject({ method: 'POST', url: '/students', payload: ada })).json()

  await t.test('PUT changes the fields given, and no others', async t => {
    const put = await app.inject({ method: 'PUT', url: `/students/${id}`, payload: { email: 'countess@example.com', age: 37 } })
    t.equal(put.statusCode, 200)
    t.match(put.json(), { ...ada, id, email: 'countess@example.com', age: 37 })
  })

  await t.test('PATCH changes the fields given, and no others', async t => {
    const patch = await app.inject({ method: 'PATCH', url: `/students/${id}`, payload: { dob: '1815-12-11', name: 'Ada King' } })
    t.equal(patch.statusCode, 200)
    t.match(patch.json(), { id, name: 'Ada King', email: 'countess@example.com', age: 37, dob: '1815-12-11' })
  })

  await t.test('another student\'s address, in another case, is 409 and changes nothing', async t => {
    const other = (await app.inject({ method: 'POST', url: '/students', payload: student(1) })).json()
    const taken = await app.inject({ method: 'PATCH', url: `/students/${other.id}`, payload: { email: 'COUNTESS@example.com' } })
    t.equal(taken.statusCode, 409)
    t.equal((await app.inject({ method: 'GET', url: `/students/${other.id}` })).json().email, student(1).email)
  })

  await t.test('a student may change the case of their own address', async t => {
    const own = await app.inject({ method: 'PATCH', url: `/students/${id}`, payload: { email: 'Countess@example.com' } })
    t.equal(own.statusCode, 200, 'a student may change the case of their own address')
  })
})

t.test('both variants serve the same table', async t => {
  const app = await build(t)
  let viaA: { id: number }
  let viaB: { id: number }

  await t.test('a student created through A is read through B', async t => {
    viaA = (await app.inject({ method: 'POST', url: '/api/v1/students', payload: ada })).json()
    t.same((await app.inject({ method: 'GET', url: `/students/${viaA.id}` })).json(), viaA)
  })

  await t.test('a student created through B is read through A', async t => {
    viaB = (await app.inject({ method: 'POST', url: '/students', payload: student(2) })).json()
    t.same((await app.inject({ method: 'GET', url: `/api/v1/students/${viaB.id}` })).json(), viaB)
  })

  await t.test('a PATCH through B shows through A', async t => {
    await app.inject({ method: 'PATCH', url: `/students/${viaA.id}`, payload: { age: 40 } })
    t.equal((await app.inject({ method: 'GET', url: `/api/v1/students/${viaA.id}` })).json().age, 40)
  })

  await t.test('a DELETE through A holds through B', async t => {
    t.equal((await app.inject({ method: 'DELETE', url: `/api/v1/students/${viaB.id}` })).statusCode, 204)
    t.equal((await app.inject({ method: 'GET', url: `/students/${viaB.id}` })).statusCode, 404)
  })
})

t.test('X-Requested-With is accepted and changes nothing', async t => {
  const app = await build(t)
  const res = await app.inject({
    method: 'POST', url: '/students', payload: ada, headers: { 'x-requested-with': 'XMLHttpRequest' }
  })
  t.equal(res.statusCode, 201)
})
