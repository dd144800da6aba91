import { Type, type Static } from '@sinclair/typebox'
import { listQuerySchema, type ListFields } from '../../lib/http/list-query.js'
import { AtLeastOneOf, BatchBody, BatchQuery, BatchRowOutcome, BulkAnswer, Created, CreateHeaders, errorResponses, Exportable, IdParams, ImportBody, ImportQuery, ImportResult, ListResponse, NotModified, ReadHeaders, Tagged, Timestamp, WriteHeaders } from '../../schemas/common.js'

/** The writable fields of a student. */
const studentFields = {
  name: Type.String({ minLength: 1, maxLength: 255, example: 'Ada Lovelace' }),
  email: Type.String({ format: 'email', maxLength: 254, description: 'Unique without regard to case', example: 'ada@example.com' }),
  age: Type.Integer({ minimum: 0, maximum: 150, example: 36 }),
  dob: Type.String({
    format: 'date',
    'x-past-date': true,
    description: 'Date of birth, `YYYY-MM-DD`: a real calendar day, not in the future',
    example: '1815-12-10'
  })
}

export const StudentInput = Type.Object(studentFields, { $id: 'StudentInput', additionalProperties: false })
export type StudentInput = Static<typeof StudentInput>

export const Student = Type.Object({
  id: Type.Integer({ minimum: 1, example: 42 }),
  ...studentFields,
  created_at: Timestamp,
  updated_at: Timestamp
}, { $id: 'Student', additionalProperties: false })
export type Student = Static<typeof Student>

/** What lists of students filter and sort on. */
export const studentListFields: ListFields = {
  id: { type: 'integer', column: 'id', sortable: true },
  name: { type: 'text', column: 'name', sortable: true },
  email: { type: 'text', column: 'email' },
  age: { type: 'integer', column: 'age', sortable: true },
  dob: { type: 'date', column: 'dob', sortable: true, description: 'date of birth' },
  created_at: { type: 'timestamp', column: 'created_at', sortable: true, description: 'creation time' },
  updated_at: { type: 'timestamp', column: 'updated_at', description: 'last update\'s time' }
}

const StudentList = Type.Array(Type.Ref(Student), { $id: 'StudentList' })

export const studentSharedSchemas = [StudentInput, Student, StudentList]

/** How a variant of the student interface updates a record. */
export type UpdateMode = 'name-only' | 'any-fields'

const NameOnly = Type.Object({ name: studentFields.name }, { additionalProperties: false })
const SomeFields = AtLeastOneOf(Type.Object(studentFields), { description: 'Any non-empty subset of the writable fields' })

/** The route schemas of one variant, named `<namespace>.index`, `.show`, `.store`, ... */
export function studentSchemas (namespace: string, tag: string) {
  const common = { tags: [tag], security: [] }
  return {
    index: (exported: boolean) => {
      const page = ListResponse(StudentList, 'One page of students')
      return {
        ...common,
        operationId: `${namespace}.index`,
        summary: 'List students',
        description: 'Students, filtered and sorted as asked (by default all, in id order), one page at a time. When more follow, a `Link: <…>; rel="next"` header points at the next page.' +
          (exported ? ' With `Accept: text/csv` or `application/x-ndjson`, every student the filters and sort match, streamed.' : ''),
        querystring: listQuerySchema(studentListFields),
        headers: ReadHeaders,
        response: { 200: exported ? Exportable(page) : page, 304: NotModified, ...errorResponses(400) }
      }
    },
    show: {
      ...common,
      operationId: `${namespace}.show`,
      summary: 'Get one student',
      description: 'The student with this id, or 404.',
      params: IdParams,
      headers: ReadHeaders,
      response: { 200: Tagged(Student, 'The student'), 304: NotModified, ...errorResponses(400, 404) }
    },
    store: {
      ...common,
      operationId: `${namespace}.store`,
      summary: 'Add a student',
      description: 'Answers 201 with the new student and its address in `Location`.',
      headers: CreateHeaders,
      body: Type.Ref(StudentInput),
      response: { 201: Created(Student, 'The new student; `Location` is its address'), ...errorResponses(400, 409, 413, 415, 422) }
    },
    batch: {
      ...common,
      operationId: `${namespace}.batch`,
      summary: 'Add students in a batch',
      description: 'Up to 1,000 students in one request, each made as `POST` of one would make it (its audit entry and change event included), in one statement, all or nothing by itself (with an `Idempotency-Key`, in the transaction that keeps the key). Answers 200 with each row\'s outcome in the rows\' order: 201 with its id and ETag, or the status and error a single create would have answered. `mode=atomic` (the default) writes every row or none: a row refused makes the answer 422 `invalid_rows`, whose `data` names each refused row by index (`3.email`). One `Idempotency-Key` covers the batch: a retry gets the same answer, and no second copy of any row.',
      querystring: BatchQuery,
      headers: CreateHeaders,
      body: BatchBody(StudentInput),
      response: { 200: BulkAnswer(Type.Array(Type.Ref(BatchRowOutcome)), 'Each row\'s outcome, in the rows\' order'), ...errorResponses(400, 409, 413, 415, 422) }
    },
    import: {
      ...common,
      operationId: `${namespace}.import`,
      summary: 'Import students from a file',
      description: 'Students from a CSV or NDJSON file, streamed: each row checked as `POST` of one would check it, then all written in one transaction, each with its audit entry and change event. `on_conflict` says what a row whose e-mail address a record holds does. Answers 200 with the counts and the first 100 rows refused, by line; with `on_conflict=error` (the default), a row refused writes nothing: 422 `invalid_rows`, whose `data` names the first 100 by line (`3.email`). One `Idempotency-Key` covers the file: a retry, even after a dropped connection, gets the first answer and writes nothing again. The time limit is `IMPORT_TIMEOUT` (10 minutes unless configured); a file too large for it is split, and each part imported with a key of its own.',
      querystring: ImportQuery,
      headers: CreateHeaders,
      body: ImportBody(StudentInput, Object.keys(studentFields)),
      response: { 200: BulkAnswer(ImportResult, 'What the import did'), ...errorResponses(400, 409, 413, 415, 422, 428) }
    },
    update (mode: UpdateMode, method: 'PUT' | 'PATCH') {
      return {
        ...common,
        operationId: method === 'PUT' ? `${namespace}.update` : `${namespace}.patch`,
        summary: mode === 'name-only' ? 'Change a student\'s name' : 'Change a student\'s details',
        description: mode === 'name-only'
          ? 'Takes the name only; any other property is refused (400).'
          : 'Changes the fields given, at least one; the others keep their values.',
        params: IdParams,
        headers: WriteHeaders,
        body: mode === 'name-only' ? NameOnly : SomeFields,
        response: { 200: Tagged(Student, 'The student as changed'), ...errorResponses(400, 404, 409, 412, 413, 415, 428) }
      }
    },
    destroy: {
      ...common,
      operationId: `${namespace}.destroy`,
      summary: 'Remove a student',
      description: 'Deletes the student for good; answers 204 with no body, 404, or 409 `referenced` while records of another table refer to the student.',
      params: IdParams,
      headers: WriteHeaders,
      response: { 204: Type.Null({ description: 'Removed' }), ...errorResponses(400, 404, 409, 412, 428) }
    }
  }
}
