import type { Knex } from 'knex'
import { jsonRows, type JsonRow } from '../../../../../../lib/db/json-row-writer.js'
import { prepare, type Database } from '../../../../../../lib/db/prepared-query.js'
import { MAX_ID, type Page } from '../../../../../../lib/http/paging.js'
import { Note, type NoteInput } from './schema.js'

const COLUMNS = ['id', 'title', 'pinned', 'created_at', 'updated_at'] as const

/** Data access for the notes table, for the routes of this folder. */
export function notesRepository (database: Database) {
  const { knex } = database
  const queries = {
    list: prepare<[after: number, limit: number], JsonRow>(database, 'notes.list', (after, limit) =>
      knex('notes').select(COLUMNS).where('id', '>', after).orderBy('id').limit(limit), jsonRows(Note)),
    find: prepare<[id: number], Note>(database, 'notes.find', id => knex('notes').select(COLUMNS).where({ id }).first())
  }

  return {
    async list ({ limit, after }: Page, trx: Knex = knex): Promise<JsonRow[]> {
      return (await queries.list([after ?? 0, limit + 1], trx)).rows
    },

    async find (id: number, trx: Knex = knex): Promise<Note | undefined> {
      if (id > MAX_ID) return undefined
      return (await queries.find([id], trx)).rows[0]
    },

    async create (input: NoteInput, trx: Knex = knex): Promise<Note> {
      const [note] = await trx('notes').insert(input).returning(COLUMNS)
      return note as Note
    },

    async update (id: number, changes: Partial<NoteInput>, trx: Knex = knex): Promise<Note | undefined> {
      if (id > MAX_ID) return undefined
      const [note] = await trx('notes').update({ ...changes, updated_at: trx.fn.now() }).where({ id }).returning(COLUMNS)
      return note as Note | undefined
    },

    async remove (id: number, trx: Knex = knex): Promise<Note | undefined> {
      if (id > MAX_ID) return undefined
      const [note] = await trx('notes').delete().where({ id }).returning(COLUMNS)
      return note as Note | undefined
    }
  }
}
