import type { Knex } from 'knex'
import { batchInsert, type BatchColumns } from '../../lib/db/batch-insert.js'
import type { ImportKind } from '../../plugins/app/import-writes.js'
import { uniqueConflict } from '../../lib/db/db-errors.js'
import { keysetTable } from '../../lib/db/keyset-table.js'
import type { CodedError } from '../../lib/http/error-codes.js'
import { MAX_ID } from '../../lib/http/limits.js'
import { insertion, prepare, type Database } from '../../lib/db/prepared-query.js'
import { versionColumn, type Versioned } from '../../lib/db/row-versions.js'
import { Student, StudentInput, studentListFields } from './schema.js'

const COLUMNS = ['id', 'name', 'email', 'age', 'dob', 'created_at', 'updated_at'] as const
/** The columns a create writes, with their types (a batch's and an import's rows are cast to them). */
const WRITTEN: BatchColumns<StudentInput> = { name: 'text', email: 'text', age: 'smallint', dob: 'date' }

/** Data access for the students table, shared by both variants of the student routes. */
export function studentsRepository (database: Database, conflict: (message: string) => CodedError) {
  const { knex } = database
  // What a write returns: the record and its new version, which tags it.
  const columnsWithVersion = [...COLUMNS, versionColumn(knex)]
  const queries = {
    create: prepare<[age: number, dob: string, email: string, name: string], Versioned<Student>>(database, 'students.create', (age, dob, email, name) =>
      knex('students').insert({ age, dob, email, name }).returning(columnsWithVersion)),
    remove: prepare<[id: number], never>(database, 'students.remove', id => knex('students').where({ id }).delete())
  }
  const emailTaken = (email: string | undefined) => conflict(`A student with e-mail ${email} already exists`)
  const emailTakenOr = (error: unknown, email: string | undefined) => uniqueConflict(error, 'students_email_unique', () => emailTaken(email))

  return {
    ...keysetTable<Student>(database, { name: 'students', rows: knex => knex('students'), columns: COLUMNS, schema: Student, fields: studentListFields }),

    /** The INSERT of a new student (request.insertOnce runs it, with or without a key). */
    insertion ({ age, dob, email, name }: StudentInput) {
      return insertion(queries.create, [age, dob, email, name], error => emailTakenOr(error, email))
    },

    /** The INSERT of a batch of new students (request.insertRecords runs it). */
    batchInsertion: batchInsert<StudentInput, Student>(database, 'students', WRITTEN, COLUMNS, 'lower(email)'),

    /** The e-mail address, unique without regard to case (`students_email_unique`). */
    uniqueEmail: { field: 'email' as const, key: (email: string) => email.toLowerCase(), takenError: emailTaken },

    /** What an import writes (request.importRecords), matching records on their e-mail address. */
    importKind: {
      resource: 'student',
      target: { table: 'students', columns: WRITTEN, returning: COLUMNS },
      row: StudentInput,
      unique: { column: 'email', key: (column: string) => `lower(${column})`, takenError: emailTaken }
    } satisfies ImportKind<StudentInput>,

    /**
     * The student as it stands, locked until `trx` ends: what the write path checks and records.
     * FOR NO KEY UPDATE: a row of another table that refers to the student (its key check takes
     * FOR KEY SHARE) is written meanwhile; a delete takes the stronger lock itself.
     */
    async lock (id: number, trx: Knex): Promise<Versioned<Student> | undefined> {
      if (id > MAX_ID) return undefined
      return trx('students').where({ id }).forNoKeyUpdate().first(columnsWithVersion) as Promise<Versioned<Student> | undefined>
    },

    /** The student as changed, in the write path's transaction, which has locked it (`lock`). */
    async update (id: number, changes: Partial<StudentInput>, trx: Knex): Promise<Versioned<Student>> {
      try {
        const [student] = await trx('students').update({ ...changes, updated_at: trx.fn.now() }).where({ id }).returning(columnsWithVersion)
        return student as Versioned<Student>
      } catch (error) {
        throw emailTakenOr(error, changes.email)
      }
    },

    /** Removes the student, in the write path's transaction, which has locked it (`lock`). */
    async remove (id: number, trx: Knex): Promise<void> {
      await queries.remove([id], trx)
    }
  }
}
