import type { Knex } from 'knex'
import { keysetTable } from '../../../../../../lib/db/keyset-table.js'
import type { Database } from '../../../../../../lib/db/prepared-query.js'
import { versionColumn, type Versioned } from '../../../../../../lib/db/row-versions.js'
import { MAX_ID } from '../../../../../../lib/http/limits.js'
import { Note, noteListFields, type NoteInput } from './schema.js'

const COLUMNS = ['id', 'title', 'pinned', 'created_at', 'updated_at'] as const

/** Data access for the notes table, for the routes of this folder. */
export function notesRepository (database: Database) {
  const { knex } = database
  // What a write returns: the record and its version, which tags it.
  const columnsWithVersion = [...COLUMNS, versionColumn(knex)]
  return {
    ...keysetTable<Note>(database, { name: 'notes', rows: knex => knex('notes'), columns: COLUMNS, schema: Note, fields: noteListFields }),

    /** The note as it stands, locked until `trx` ends: what the write path checks and records. */
    async lock (id: number, trx: Knex): Promise<Versioned<Note> | undefined> {
      if (id > MAX_ID) return undefined
      return trx('notes').where({ id }).forUpdate().first(columnsWithVersion) as Promise<Versioned<Note> | undefined>
    },

    async create (input: NoteInput, trx: Knex): Promise<Versioned<Note>> {
      const [note] = await trx('notes').insert(input).returning(columnsWithVersion)
      return note as Versioned<Note>
    },

    async update (id: number, changes: Partial<NoteInput>, trx: Knex): Promise<Versioned<Note>> {
      const [note] = await trx('notes').update({ ...changes, updated_at: trx.fn.now() }).where({ id }).returning(columnsWithVersion)
      return note as Versioned<Note>
    },

    async remove (id: number, trx: Knex): Promise<void> {
      await trx('notes').delete().where({ id })
    }
  }
}
