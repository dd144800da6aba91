import type { Knex } from 'knex'
import { keysetTable } from '../../../../../../lib/db/keyset-table.js'
import type { Database } from '../../../../../../lib/db/prepared-query.js'
import { MAX_ID } from '../../../../../../lib/http/limits.js'
import { Note, noteListFields, type NoteInput } from './schema.js'

const COLUMNS = ['id', 'title', 'pinned', 'created_at', 'updated_at'] as const

/** Data access for the notes table, for the routes of this folder. */
export function notesRepository (database: Database) {
  const { knex } = database
  return {
    ...keysetTable<Note>(database, { name: 'notes', rows: knex => knex('notes'), columns: COLUMNS, schema: Note, fields: noteListFields }),

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
