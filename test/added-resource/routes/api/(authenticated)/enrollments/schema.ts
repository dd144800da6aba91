import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../../../../../lib/http/list-query.js'
import { MAX_ID } from '../../../../../../lib/http/limits.js'
import { AtLeastOneOf, Created, CreateHeaders, Envelope, errorResponses, IdParams, ListResponse, NotModified, ReadHeaders, Tagged, Timestamp, WriteHeaders } from '../../../../../../schemas/common.js'

const EnrollmentStatus = Type.Union([Type.Literal('enrolled'), Type.Literal('completed'), Type.Literal('withdrawn')], { example: 'enrolled' })

export const enrollmentChanges = {
  status: EnrollmentStatus
}

export const EnrollmentInput = Type.Object({
  student_id: Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'The student\'s id (`/students/{id}`)', example: 42 }),
  course_id: Type.Integer({ minimum: 1, maximum: MAX_ID, description: 'The course\'s id (`/api/courses/{id}`)', example: 7 }),
  status: Type.Optional({ ...EnrollmentStatus, description: '`enrolled` unless given' })
}, { $id: 'EnrollmentInput', additionalProperties: false })
export type EnrollmentInput = Static<typeof EnrollmentInput>

export const Enrollment = Type.Object({
  id: Type.Integer({ minimum: 1 }),
  student_id: Type.Integer({ minimum: 1 }),
  course_id: Type.Integer({ minimum: 1 }),
  status: EnrollmentStatus,
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Enrollment', additionalProperties: false })
export type Enrollment = Static<typeof Enrollment>

/** What lists of enrollments filter and sort on: a student's, a course's, by status. */
export const enrollmentListFields: ListFields = {
  id: { type: 'integer', column: 'id', sortable: true },
  student_id: { type: 'integer', column: 'student_id', operators: ['eq', 'in'], description: 'the student\'s id' },
  course_id: { type: 'integer', column: 'course_id', operators: ['eq', 'in'], description: 'the course\'s id' },
  status: { type: 'text', column: 'status', operators: ['eq', 'ne', 'in'] },
  created_at: { type: 'timestamp', column: 'created_at', description: 'enrollment time' }
}

/** The OpenAPI tag of every enrollment operation. */
export const enrollmentsTag = { name: 'enrollments', description: 'Students\' enrollments in courses, behind the enrollment-* permissions' }
const auth = { tags: [enrollmentsTag.name], security: [{ bearerAuth: [] }] }
const EnrollmentEnvelope = (description: string) => Envelope(Type.Ref(Enrollment), { description })

export const enrollmentSchemas = {
  index: {
    ...auth,
    operationId: 'enrollments.index',
    summary: 'List enrollments',
    description: 'Filtered and sorted as asked (`student_id[eq]=42`: a student\'s), `limit` at a time; needs enrollment-list.',
    querystring: listQuerySchema(enrollmentListFields),
    response: { 200: ListResponse(Envelope(Type.Array(Type.Ref(Enrollment))), 'One page of enrollments'), ...errorResponses(400, 401, 403) }
  },
  show: {
    ...auth,
    operationId: 'enrollments.show',
    summary: 'Get one enrollment',
    description: 'Needs enrollment-list.',
    params: IdParams,
    headers: ReadHeaders,
    response: { 200: Tagged(EnrollmentEnvelope('The enrollment'), 'The enrollment'), 304: NotModified, ...errorResponses(400, 401, 403, 404) }
  },
  store: {
    ...auth,
    operationId: 'enrollments.store',
    summary: 'Enroll a student in a course',
    description: 'The student and the course must exist (409 `missing_reference`), and the student not be enrolled in it already (409 `conflict`); needs enrollment-create.',
    headers: CreateHeaders,
    body: Type.Ref(EnrollmentInput),
    response: { 201: Created(EnrollmentEnvelope('The new enrollment'), 'The new enrollment; `Location` is its address'), ...errorResponses(400, 401, 403, 409, 413, 415, 422) }
  },
  patch: {
    ...auth,
    operationId: 'enrollments.patch',
    summary: 'Change an enrollment\'s status',
    description: 'Its student and course stay; needs enrollment-edit.',
    params: IdParams,
    headers: WriteHeaders,
    body: AtLeastOneOf(Type.Object(enrollmentChanges)),
    response: { 200: Tagged(EnrollmentEnvelope('The enrollment as changed'), 'The enrollment as changed'), ...errorResponses(400, 401, 403, 404, 412, 413, 415, 428) }
  },
  destroy: {
    ...auth,
    operationId: 'enrollments.destroy',
    summary: 'Delete an enrollment',
    description: 'Needs enrollment-delete.',
    params: IdParams,
    headers: WriteHeaders,
    response: { 200: EnrollmentEnvelope('The deleted enrollment'), ...errorResponses(400, 401, 403, 404, 412, 428) }
  }
}

export const enrollmentSharedSchemas = [EnrollmentInput, Enrollment]
