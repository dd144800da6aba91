import path from 'node:path'
import t, { type Test } from 'tap'
import { build } from './helper.js'
import { bearer, userWithRoles } from './routes/api/accounts.js'
import { fuzzWrites } from './fuzz/writes.js'
import { ada, student } from './routes/students/fixtures.js'
import { up as createCourses } from './added-resource/db/migrations/20261125000000_create_courses.js'
import { up as createEnrollments } from './added-resource/db/migrations/20261125010000_create_enrollments.js'

// test/added-resource/ holds the relation docs/adding-a-resource.md adds: courses, and
// enrollments of a student in a course, each a migration and one folder that nothing else names.
const ROUTES = path.join(import.meta.dirname, 'added-resource', 'routes')

async function setUp (t: Test) {
  const app = await build(t, config => { Object.assign(config.auth.rateLimit, { perIp: 1_000_000, perEmail: 1_000_000 }) }, { routes: ROUTES })
  await createCourses(app.knex)
  await createEnrollments(app.knex)
  const admin = await userWithRoles(app, ['Admin'])
  const headers = bearer(admin.token)
  const post = async (url: string, payload: object) => {
    const created = await app.inject({ method: 'POST', url, headers, payload })
    t.equal(created.statusCode, 201, `POST ${url}`)
    return created.json().data ?? created.json()
  }
  return { app, headers, token: admin.token, post }
}

t.test('enrollments: a student\'s and a course\'s, filtered and counted; a second enrollment or one of nobody is a 409', async t => {
  const { app, headers, post } = await setUp(t)
  const ada1 = await post('/students', ada)
  const grace = await post('/students', student(2))
  const algebra = await post('/api/courses', { code: 'MATH-101', title: 'Linear algebra' })
  const logic = await post('/api/courses', { code: 'PHIL-210', title: 'Logic' })
  await post('/api/enrollments', { student_id: ada1.id, course_id: algebra.id })
  await post('/api/enrollments', { student_id: ada1.id, course_id: logic.id, status: 'completed' })
  await post('/api/enrollments', { student_id: grace.id, course_id: logic.id })

  const adas = await app.inject({ url: `/api/enrollments?student_id[eq]=${ada1.id}&count=exact`, headers })
  t.equal(adas.statusCode, 200)
  t.match(adas.json(), { success: true, data: [{ course_id: algebra.id, status: 'enrolled' }, { course_id: logic.id, status: 'completed' }] }, 'a student\'s enrollments')
  t.equal(adas.headers['x-total-count'], '2', 'counted')
  const logics = await app.inject({ url: `/api/enrollments?course_id[eq]=${logic.id}&status[eq]=enrolled&count=exact`, headers })
  t.match(logics.json(), { success: true, data: [{ student_id: grace.id }] }, 'a course\'s, by status')
  t.equal(logics.headers['x-total-count'], '1')
  const titled = await app.inject({ url: '/api/courses?title[starts_with]=Lin&count=exact', headers })
  t.match(titled.json(), { success: true, data: [{ code: 'MATH-101' }] }, 'courses, filtered')
  t.equal(titled.headers['x-total-count'], '1')

  const twice = await app.inject({ method: 'POST', url: '/api/enrollments', headers, payload: { student_id: ada1.id, course_id: algebra.id } })
  t.same(twice.json(), { success: false, statusCode: 409, error: 'Conflict', code: 'conflict', message: `Student ${ada1.id} is enrolled in course ${algebra.id} already` }, 'a second enrollment in the same course')
  const nobody = await app.inject({ method: 'POST', url: '/api/enrollments', headers, payload: { student_id: 999999, course_id: algebra.id } })
  t.same(nobody.json(), { success: false, statusCode: 409, error: 'Conflict', code: 'missing_reference', message: 'The record refers to one that does not exist' }, 'an enrollment of a student who does not exist')
  const nowhere = await app.inject({ method: 'POST', url: '/api/enrollments', headers, payload: { student_id: grace.id, course_id: 999999 } })
  t.equal(nowhere.json().code, 'missing_reference', 'in a course that does not exist')
  const code = await app.inject({ method: 'POST', url: '/api/courses', headers, payload: { code: 'MATH-101', title: 'Again' } })
  t.same(code.json(), { success: false, statusCode: 409, error: 'Conflict', code: 'conflict', message: 'Another course has the code MATH-101' }, 'a course code in use')
  const recoded = await app.inject({ method: 'PATCH', url: `/api/courses/${logic.id}`, headers, payload: { code: 'MATH-101' } })
  t.equal(recoded.json().code, 'conflict', 'on a change too')
  t.equal((await app.knex('enrollments').count({ n: '*' }))[0]!.n, '3', 'and nothing written')

  const user = await userWithRoles(app, ['User'])
  t.equal((await app.inject({ url: '/api/enrollments', headers: bearer(user.token) })).statusCode, 403, 'behind their permissions')
  t.equal((await app.inject({ url: '/api/courses' })).statusCode, 401, 'and the token check')
})

t.test('a student or a course with enrollments is not deleted: 409 `referenced`, naming the table, and nothing changed', async t => {
  const { app, headers, post } = await setUp(t)
  const enrolled = await post('/students', ada)
  const course = await post('/api/courses', { code: 'MATH-101', title: 'Linear algebra' })
  const enrollment = await post('/api/enrollments', { student_id: enrolled.id, course_id: course.id })
  const referenced = { success: false, statusCode: 409, error: 'Conflict', code: 'referenced', message: 'The record is still referred to by enrollments; change or remove those first' }

  for (const url of [`/students/${enrolled.id}`, `/api/v1/students/${enrolled.id}`, `/api/courses/${course.id}`]) {
    const refused = await app.inject({ method: 'DELETE', url, headers })
    t.equal(refused.statusCode, 409, `DELETE ${url}`)
    t.same(refused.json(), referenced)
  }
  t.equal((await app.inject({ url: `/students/${enrolled.id}` })).statusCode, 200, 'the student is still there')
  t.equal((await app.inject({ url: `/api/courses/${course.id}`, headers })).statusCode, 200, 'and the course')
  t.equal((await app.knex('audit_log').whereIn('resource', ['student', 'course']).where('action', 'delete').count({ n: '*' }))[0]!.n, '0', 'no delete audited')

  t.equal((await app.inject({ method: 'DELETE', url: `/api/enrollments/${enrollment.id}`, headers })).statusCode, 200)
  t.equal((await app.inject({ method: 'DELETE', url: `/students/${enrolled.id}` })).statusCode, 204, 'once unenrolled, the student goes')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/courses/${course.id}`, headers })).statusCode, 200, 'and the course')
})

t.test('courses and enrollments get what every write gets: ETag and If-Match, Idempotency-Key, audit entries and outbox rows', async t => {
  const { app, headers, post } = await setUp(t)
  const enrolled = await post('/students', ada)
  const course = await post('/api/courses', { code: 'MATH-101', title: 'Linear algebra' })
  const enroll = () => app.inject({ method: 'POST', url: '/api/enrollments', headers: { ...headers, 'idempotency-key': 'enroll-ada' }, payload: { student_id: enrolled.id, course_id: course.id } })
  const created = await enroll()
  const again = await enroll()
  t.equal(created.statusCode, 201)
  t.match(created.headers.location, /^\/api\/enrollments\/\d+$/)
  t.equal(again.headers['idempotent-replayed'], 'true', 'a retry is answered from the kept answer, not as a second enrollment')
  t.same(again.json(), created.json())
  const { id } = created.json().data

  const shown = await app.inject({ url: `/api/enrollments/${id}`, headers })
  t.equal(shown.headers.etag, created.headers.etag, 'a read carries the create\'s tag')
  const completed = await app.inject({ method: 'PATCH', url: `/api/enrollments/${id}`, headers: { ...headers, 'if-match': shown.headers.etag as string }, payload: { status: 'completed' } })
  t.equal(completed.statusCode, 200)
  t.equal(completed.json().data.status, 'completed')
  const stale = await app.inject({ method: 'DELETE', url: `/api/enrollments/${id}`, headers: { ...headers, 'if-match': shown.headers.etag as string } })
  t.equal(stale.statusCode, 412)
  t.equal(stale.headers.etag, completed.headers.etag, '412 with the current tag')
  t.equal((await app.inject({ method: 'DELETE', url: `/api/enrollments/${id}`, headers: { ...headers, 'if-match': completed.headers.etag as string } })).statusCode, 200)
  const renamed = await app.inject({ method: 'PATCH', url: `/api/courses/${course.id}`, headers: { ...headers, 'if-match': created.headers.etag as string }, payload: { title: 'Algebra' } })
  t.equal(renamed.statusCode, 412, 'a course\'s tag is its own')

  const audited = await app.inject({ url: `/api/audit?resource[eq]=enrollment&resource_id[eq]=${id}&sort=id`, headers })
  t.same(audited.json().data.map((entry: { action: string }) => entry.action), ['create', 'update', 'delete'], 'audited, with no line naming enrollments outside their folder')
  const rows = await app.knex('change_outbox').whereIn('resource', ['course', 'enrollment']).orderBy('id').select('resource', 'action', 'changed')
  t.same(rows, [
    { resource: 'course', action: 'create', changed: null },
    { resource: 'enrollment', action: 'create', changed: null },
    { resource: 'enrollment', action: 'update', changed: ['status'] },
    { resource: 'enrollment', action: 'delete', changed: null }
  ], 'and outboxed')
})

t.test('courses and enrollments are in the OpenAPI document, with their tags and components', async t => {
  const { app } = await setUp(t)
  const document = (await app.inject({ url: '/documentation/json' })).json()
  const paths = Object.keys(document.paths)
  t.same(paths.filter(path => /^\/api\/(courses|enrollments)/.test(path)), ['/api/courses', '/api/courses/{id}', '/api/enrollments', '/api/enrollments/{id}'])
  t.same(Object.values(document.paths['/api/enrollments/{id}']).map(operation => (operation as { operationId: string }).operationId), ['enrollments.show', 'enrollments.patch', 'enrollments.destroy'])
  t.ok(document.paths['/api/enrollments'].get.parameters.some((parameter: { name: string }) => parameter.name === 'student_id'), 'a student\'s enrollments are a filter of the list')
  t.same(document.tags.filter((tag: { name: string }) => ['courses', 'enrollments'].includes(tag.name)).map((tag: { name: string }) => tag.name), ['courses', 'enrollments'], 'their tags, declared once')
  for (const name of ['Course', 'CourseInput', 'Enrollment', 'EnrollmentInput']) t.ok(document.components.schemas[name], `${name} is a component`)
  t.ok(document.paths['/students/{id}'].delete.responses['409'], 'a student\'s delete documents the 409 of a record referred to')
})

t.test('courses and enrollments are fuzzed as every other resource', async t => {
  const { app, token, post } = await setUp(t)
  const enrolled = await post('/students', ada)
  const course = await post('/api/courses', { code: 'MATH-101', title: 'Linear algebra' })
  const enrollment = await post('/api/enrollments', { student_id: enrolled.id, course_id: course.id })
  // New enrollments refer to another student: that one may enroll in the course.
  const other = await post('/students', student(1))
  await fuzzWrites(t, app, { token, ids: { students: other.id, courses: course.id, enrollments: enrollment.id }, paths: path => /^\/api\/(courses|enrollments)/.test(path) })
})
