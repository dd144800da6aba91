import fp from 'fastify-plugin'
import type { Knex } from 'knex'
import { uniqueConflict } from '../lib/db-errors.js'
import { MAX_ID, type Page } from '../lib/paging.js'
import type { Student, StudentInput } from '../schemas/students.js'

declare module 'fastify' {
  interface FastifyInstance {
    studentsRepository: ReturnType<typeof createStudentsRepository>
  }
}

const COLUMNS = ['id', 'name', 'email', 'age', 'dob', 'created_at', 'updated_at'] as const

// Queries whose SQL text never varies are named: pg prepares them once per connection, and
// PostgreSQL skips parsing and planning them again (measured by `npm run bench`).

function createStudentsRepository (knex: Knex, conflict: (message: string) => Error) {
  const emailTakenOr = (error: unknown, email: string | undefined) =>
    uniqueConflict(error, 'students_email_unique', () => conflict(`A student with e-mail ${email} already exists`))

  return {
    /** One page, in id order; asks for one row more than the limit to tell whether more follow. */
    async list ({ limit, after }: Page, trx: Knex = knex): Promise<Student[]> {
      return trx('students').select(COLUMNS).where('id', '>', after ?? 0).orderBy('id').limit(limit + 1)
        .options({ name: 'students.list' })
    },

    async find (id: number, trx: Knex = knex): Promise<Student | undefined> {
      if (id > MAX_ID) return undefined
      return trx('students').select(COLUMNS).where({ id }).first().options({ name: 'students.find' })
    },

    async create (input: StudentInput, trx: Knex = knex): Promise<Student> {
      try {
        const [student] = await trx('students').insert(input).returning(COLUMNS).options({ name: 'students.create' })
        return student as Student
      } catch (error) {
        throw emailTakenOr(error, input.email)
      }
    },

    async update (id: number, changes: Partial<StudentInput>, trx: Knex = knex): Promise<Student | undefined> {
      if (id > MAX_ID) return undefined
      try {
        const [student] = await trx('students')
          .update({ ...changes, updated_at: trx.fn.now() })
          .where({ id })
          .returning(COLUMNS)
        return student as Student | undefined
      } catch (error) {
        throw emailTakenOr(error, changes.email)
      }
    },

    async remove (id: number, trx: Knex = knex): Promise<boolean> {
      if (id > MAX_ID) return false
      return await trx('students').where({ id }).delete() > 0
    }
  }
}

/** Data access for the students table, shared by both variants of the student routes. */
export default fp(async (fastify) => {
  fastify.decorate('studentsRepository', createStudentsRepository(fastify.knex, message => fastify.httpErrors.conflict(message)))
}, { name: 'students-repository', dependencies: ['knex', 'sensible'] })
