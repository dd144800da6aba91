import type { Knex } from 'knex'
import { keysetTable } from '../../../../../../lib/db/keyset-table.js'
import { uniqueConflict } from '../../../../../../lib/db/db-errors.js'
import type { Database } from '../../../../../../lib/db/prepared-query.js'
import { versionColumn, type Versioned } from '../../../../../../lib/db/row-versions.js'
import { MAX_ID } from '../../../../../../lib/http/limits.js'
import { Enrollment, enrollmentListFields, type EnrollmentInput } from './schema.js'

const COLUMNS = ['id', 'student_id', 'course_id', 'status', 'created_at', 'updated_at'] as const

/** Data access for the enrollments table, for the routes of this folder; `enrolledAlready` is the 409 of a second enrollment. */
export function enrollmentsRepository (database: Database, enrolledAlready: (input: EnrollmentInput) => Error) {
  const { knex } = database
  // What a write returns: the record and its version, which tags it.
  const columnsWithVersion = [...COLUMNS, versionColumn(knex)]
  return {
    ...keysetTable<Enrollment>(database, { name: 'enrollments', rows: knex => knex('enrollments'), columns: COLUMNS, schema: Enrollment, fields: enrollmentListFields }),

    /** The enrollment as it stands, locked until `trx` ends: what the write path checks and records. */
    async lock (id: number, trx: Knex): Promise<Versioned<Enrollment> | undefined> {
      if (id > MAX_ID) return undefined
      return trx('enrollments').where({ id }).forUpdate().first(columnsWithVersion) as Promise<Versioned<Enrollment> | undefined>
    },

    /**
     * A student or course that does not exist is refused by PostgreSQL: the write path answers
     * 409 `missing_reference`. A second enrollment of the student in the course, `enrolledAlready`.
     */
    async create (input: EnrollmentInput, trx: Knex): Promise<Versioned<Enrollment>> {
      const [enrollment] = await trx('enrollments').insert(input).returning(columnsWithVersion)
        .catch((error: unknown) => { throw uniqueConflict(error, 'enrollments_student_course_unique', () => enrolledAlready(input)) })
      return enrollment as Versioned<Enrollment>
    },

    async update (id: number, changes: { status?: Enrollment['status'] }, trx: Knex): Promise<Versioned<Enrollment>> {
      const [enrollment] = await trx('enrollments').update({ ...changes, updated_at: trx.fn.now() }).where({ id }).returning(columnsWithVersion)
      return enrollment as Versioned<Enrollment>
    },

    async remove (id: number, trx: Knex): Promise<void> {
      await trx('enrollments').delete().where({ id })
    }
  }
}
