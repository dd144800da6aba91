import type { Knex } from 'knex'
import { jsonRows, type JsonRow } from '../../../../lib/db/json-row-writer.js'
import { MAX_ID, type Page } from '../../../../lib/http/paging.js'
import { prepare, type Database } from '../../../../lib/db/prepared-query.js'
import { Client, type ClientInput } from './schema.js'

const COLUMNS = ['id', 'name', 'vat_number', 'street', 'city', 'post_code', 'email', 'created_at', 'updated_at'] as const

/** Data access for the clients table, for the routes of this folder. */
export function clientsRepository (database: Database) {
  const { knex } = database
  const live = (trx: Knex) => trx('clients').whereNull('deleted_at')
  const queries = {
    list: prepare<[after: number, limit: number], JsonRow>(database, 'clients.list', (after, limit) =>
      live(knex).select(COLUMNS).where('id', '>', after).orderBy('id').limit(limit), jsonRows(Client)),
    find: prepare<[id: number], Client>(database, 'clients.find', id => live(knex).select(COLUMNS).where({ id }).first())
  }

  return {
    /** One page, in id order, each client written as JSON; one row more than the limit tells whether more follow. */
    async list ({ limit, after }: Page, trx: Knex = knex): Promise<JsonRow[]> {
      return (await queries.list([after ?? 0, limit + 1], trx)).rows
    },

    async find (id: number, trx: Knex = knex): Promise<Client | undefined> {
      if (id > MAX_ID) return undefined
      return (await queries.find([id], trx)).rows[0]
    },

    async create (input: ClientInput, trx: Knex = knex): Promise<Client> {
      const [client] = await trx('clients').insert(input).returning(COLUMNS)
      return client as Client
    },

    async update (id: number, changes: Partial<ClientInput>, trx: Knex = knex): Promise<Client | undefined> {
      if (id > MAX_ID) return undefined
      const [client] = await live(trx).update({ ...changes, updated_at: trx.fn.now() }).where({ id }).returning(COLUMNS)
      return client as Client | undefined
    },

    /** Soft delete: the row stays, with deleted_at set. */
    async remove (id: number, trx: Knex = knex): Promise<Client | undefined> {
      if (id > MAX_ID) return undefined
      const [client] = await live(trx).update({ deleted_at: trx.fn.now() }).where({ id }).returning(COLUMNS)
      return client as Client | undefined
    }
  }
}
