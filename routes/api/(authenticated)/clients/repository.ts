import type { Knex } from 'knex'
import { batchInsert, type BatchColumns } from '../../../../lib/db/batch-insert.js'
import type { ImportKind } from '../../../../plugins/app/import-writes.js'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { insertion, prepare, type Database } from '../../../../lib/db/prepared-query.js'
import { versionColumn, type Versioned } from '../../../../lib/db/row-versions.js'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { Client, ClientInput, clientListFields } from './schema.js'

const COLUMNS = ['id', 'name', 'vat_number', 'street', 'city', 'post_code', 'email', 'created_at', 'updated_at'] as const
/** The columns a create writes, with their types (a batch's and an import's rows are cast to them). */
const WRITTEN: BatchColumns<ClientInput> = { name: 'text', vat_number: 'text', street: 'text', city: 'text', post_code: 'text', email: 'text' }

/** Data access for the clients table, for the routes of this folder. */
export function clientsRepository (database: Database) {
  const { knex } = database
  const notDeleted = (trx: Knex) => trx('clients').whereNull('deleted_at')
  // What a write returns: the record and its new version, which tags it.
  const columnsWithVersion = [...COLUMNS, versionColumn(knex)]
  const create = prepare<[name: string, vatNumber: string, street: string, city: string, postCode: string, email: string], Versioned<Client>>(database, 'clients.create',
    (name, vatNumber, street, city, postCode, email) => knex('clients').insert({ name, vat_number: vatNumber, street, city, post_code: postCode, email }).returning(columnsWithVersion))

  return {
    ...keysetTable<Client>(database, { name: 'clients', rows: notDeleted, columns: COLUMNS, schema: Client, fields: clientListFields }),

    /** The INSERT of a new client (request.insertOnce runs it, with or without a key). */
    insertion ({ name, vat_number: vatNumber, street, city, post_code: postCode, email }: ClientInput) {
      return insertion(create, [name, vatNumber, street, city, postCode, email])
    },

    /** The INSERT of a batch of new clients (request.insertRecords runs it). */
    batchInsertion: batchInsert<ClientInput, Client>(database, 'clients', WRITTEN, COLUMNS),

    /** What an import writes (request.importRecords): clients have no unique field to match records on. */
    importKind: { resource: 'client', target: { table: 'clients', columns: WRITTEN, returning: COLUMNS }, row: ClientInput } satisfies ImportKind<ClientInput>,

    /** The client as it stands, locked until `trx` ends: what its audit entry tells it was. */
    async lock (id: number, trx: Knex): Promise<Versioned<Client> | undefined> {
      if (id > MAX_ID) return undefined
      return notDeleted(trx).where({ id }).forUpdate().first(columnsWithVersion) as Promise<Versioned<Client> | undefined>
    },

    /** The client as changed, in the write path's transaction, which has locked it (`lock`). */
    async update (id: number, changes: Partial<ClientInput>, trx: Knex): Promise<Versioned<Client>> {
      const [client] = await notDeleted(trx).update({ ...changes, updated_at: trx.fn.now() }).where({ id }).returning(columnsWithVersion)
      return client as Versioned<Client>
    },

    /** Soft delete, in the write path's transaction: the row stays, with deleted_at set. */
    async remove (id: number, trx: Knex): Promise<void> {
      await notDeleted(trx).update({ deleted_at: trx.fn.now() }).where({ id })
    }
  }
}
