import type { Knex } from 'knex'
import { keysetTable } from '../../../../lib/db/keyset-table.js'
import { insertion, prepare, type Database } from '../../../../lib/db/prepared-query.js'
import { atVersion, versionColumn, type Versioned } from '../../../../lib/db/row-versions.js'
import { MAX_ID } from '../../../../lib/http/limits.js'
import { Client, clientListFields, type ClientInput } from './schema.js'

const COLUMNS = ['id', 'name', 'vat_number', 'street', 'city', 'post_code', 'email', 'created_at', 'updated_at'] as const

/** Data access for the clients table, for the routes of this folder. */
export function clientsRepository (database: Database) {
  const { knex } = database
  const live = (trx: Knex) => trx('clients').whereNull('deleted_at')
  // What a write returns: the record and its new version, which tags it.
  const written = [...COLUMNS, versionColumn(knex)]
  const create = prepare<[name: string, vatNumber: string, street: string, city: string, postCode: string, email: string], Versioned<Client>>(database, 'clients.create',
    (name, vatNumber, street, city, postCode, email) => knex('clients').insert({ name, vat_number: vatNumber, street, city, post_code: postCode, email }).returning(written))

  return {
    ...keysetTable<Client>(database, { name: 'clients', rows: live, columns: COLUMNS, schema: Client, fields: clientListFields }),

    /** The INSERT of a new client (request.insertOnce runs it, with or without a key). */
    insertion ({ name, vat_number: vatNumber, street, city, post_code: postCode, email }: ClientInput) {
      return insertion(create, [name, vatNumber, street, city, postCode, email])
    },

    /** The client as it stands, locked until `trx` ends: what its audit entry tells it was. */
    async lock (id: number, trx: Knex): Promise<Client | undefined> {
      if (id > MAX_ID) return undefined
      return live(trx).where({ id }).forUpdate().first(COLUMNS)
    },

    /**
     * The client as changed; undefined if there is none with this id at one of `versions` (any,
     * without). Its caller has locked it first (`lock`), which answered for an id past MAX_ID.
     */
    async update (id: number, changes: Partial<ClientInput>, versions?: string[], trx: Knex = knex): Promise<Versioned<Client> | undefined> {
      const [client] = await atVersion(live(trx).update({ ...changes, updated_at: trx.fn.now() }).where({ id }), versions).returning(written)
      return client as Versioned<Client> | undefined
    },

    /** Soft delete: the row stays, with deleted_at set. Undefined as for `update`. */
    async remove (id: number, versions?: string[], trx: Knex = knex): Promise<Client | undefined> {
      if (id > MAX_ID) return undefined
      const [client] = await atVersion(live(trx).update({ deleted_at: trx.fn.now() }).where({ id }), versions).returning(COLUMNS)
      return client as Client | undefined
    }
  }
}
