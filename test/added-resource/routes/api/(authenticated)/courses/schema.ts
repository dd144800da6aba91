import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../../../lib/http/list-query.js'
import { AtLeastOneOf, Created, CreateHeaders, Envelope, errorResponses, IdParams, ListResponse, NotModified, ReadHeaders, Tagged, Timestamp, WriteHeaders } from '../../../../../../schemas/common.js'

export const courseFields = {
  code: Type.String({ pattern: '^[A-Z0-9-]{2,20}$', description: 'Unique: capitals, digits and hyphens', example: 'MATH-101' }),
  title: Type.String({ minLength: 1, maxLength: 200, example: 'Linear algebra' })
}

export const CourseInput = Type.Object(courseFields, { $id: 'CourseInput', additionalProperties: false })
export type CourseInput = Static<typeof CourseInput>

export const Course = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  ...courseFields,
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Course', additionalProperties: false })
export type Course = Static<typeof Course>

/** What lists of courses filter and sort on. */
export const courseListFields: ListFields = {
  id: { type: 'integer', column: 'id', sortable: true },
  code: { type: 'text', column: 'code' },
  title: { type: 'text', column: 'title', sortable: true },
  created_at: { type: 'timestamp', column: 'created_at', description: 'creation time' }
}

/** The OpenAPI tag of every course operation. */
export const coursesTag = { name: 'courses', description: 'Courses, behind the course-* permissions' }
const auth = { tags: [coursesTag.name], security: [{ bearerAuth: [] }] }
const CourseEnvelope = (description: string) => Envelope(Type.Ref(Course), { description })

export const courseSchemas = {
  index: {
    ...auth,
    operationId: 'courses.index',
    summary: 'List courses',
    description: 'Filtered and sorted as asked, `limit` at a time; needs course-list.',
    querystring: listQuerySchema(courseListFields),
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(Course))), 'One page of courses'), ...errorResponses(400, 401, 403) }
  },
  show: {
    ...auth,
    operationId: 'courses.show',
    summary: 'Get one course',
    description: 'Needs course-list.',
    params: IdParams,
    headers: ReadHeaders,
    response: { 200: Tagged(CourseEnvelope('The course'), 'The course'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  store: {
    ...auth,
    operationId: 'courses.store',
    summary: 'Create a course',
    description: 'Its code must be unused (409 `conflict`); needs course-create.',
    headers: CreateHeaders,
    body: Type.Ref(CourseInput),
    response: { 201: Created(CourseEnvelope('The new course'), 'The new course; `Location` is its address'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  patch: {
    ...auth,
    operationId: 'courses.patch',
    summary: 'Change some fields of a course',
    description: 'Takes at least one field; a code must be unused (409 `conflict`). Needs course-edit.',
    params: IdParams,
    headers: WriteHeaders,
    body: AtLeastOneOf(Type.Object(courseFields)),
    response: { 200: Tagged(CourseEnvelope('The course as changed'), 'The course as changed'), ...errorResponses(400, 401, 403, 404, 409, 412, 413, 415, 428) }
  },
  destroy: {
    ...auth,
    operationId: 'courses.destroy',
    summary: 'Delete a course',
    description: 'Refused while students are enrolled in it (409 `referenced`); needs course-delete.',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: CourseEnvelope('The deleted course'), ...errorResponses(400, 401, 403, 404, 409, 412, 428) }
  }
}

export const courseSharedSchemas = [CourseInput, Course]
