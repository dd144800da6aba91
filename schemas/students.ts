import { Type, type Static } from '@sinclair/typebox'
import { Timestamp } from './common.js'

/** The writable fields of a student. */
export const studentFields = {
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

export const StudentList = Type.Array(Type.Ref(Student), { $id: 'StudentList' })

export const studentSharedSchemas = [StudentInput, Student, StudentList]
