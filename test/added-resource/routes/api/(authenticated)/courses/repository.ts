import type { Knex } from 'knex'
import { keysetTable } from '../../../../../../lib/db/keyset-table.js'
import { uniqueConflict } from '../../../../../../lib/db/db-errors.js'
import type { Database } from '../../../../../../lib/db/prepared-query.js'
import { versionColumn, type Versioned } from '../../../../../../lib/db/row-versions.js'
import { MAX_ID } from '../../../../../../lib/http/limits.js'
import { Course, courseListFields, type CourseInput } from './schema.js'

const COLUMNS = ['id', 'code', 'title', 'created_at', 'updated_at'] as const

/** Data access for the courses table, for the routes of this folder; `codeTaken` is the 409 of a code in use. */
export function coursesRepository (database: Database, codeTaken: (code: string) => Error) {
  const { knex } = database
  // What a write returns: the record and its version, which tags it.
  const columnsWithVersion = [...COLUMNS, versionColumn(knex)]
  const taken = (code: string | undefined) => (error: unknown) => { throw uniqueConflict(error, 'courses_code_unique', () => codeTaken(code!)) }
  return {
    ...keysetTable<Course>(database, { name: 'courses', rows: knex => knex('courses'), columns: COLUMNS, schema: Course, fields: courseListFields }),

    /**
     * The course as it stands, locked until `trx` ends: what the write path checks and records.
     * FOR NO KEY UPDATE, as a table others refer to: an enrollment in it (whose key check takes
     * FOR KEY SHARE) is not held up by a change of its title.
     */
    async lock (id: number, trx: Knex): Promise<Versioned<Course> | undefined> {
      if (id > MAX_ID) return undefined
      return trx('courses').where({ id }).forNoKeyUpdate().first(columnsWithVersion) as Promise<Versioned<Course> | undefined>
    },

    async create (input: CourseInput, trx: Knex): Promise<Versioned<Course>> {
      const [course] = await trx('courses').insert(input).returning(columnsWithVersion).catch(taken(input.code))
      return course as Versioned<Course>
    },

    async update (id: number, changes: Partial<CourseInput>, trx: Knex): Promise<Versioned<Course>> {
      const [course] = await trx('courses').update({ ...changes, updated_at: trx.fn.now() }).where({ id }).returning(columnsWithVersion).catch(taken(changes.code))
      return course as Versioned<Course>
    },

    /** Refused by PostgreSQL while enrollments refer to the course: the write path answers 409 `referenced`. */
    async remove (id: number, trx: Knex): Promise<void> {
      await trx('courses').delete().where({ id })
    }
  }
}
