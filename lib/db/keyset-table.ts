import type { TObject } from '@sinclair/typebox'
import type { Knex } from 'knex'
import { MAX_ID, type Page } from '../http/paging.js'
import { jsonRows, type JsonRow } from './json-row-writer.js'
import { prepare, type Database } from './prepared-query.js'

/**
 * The reads every resource's table gets, prepared once: pages in id order after the id
 * `after`, each row written as JSON of the resource's schema, and one row by id. `rows` is the
 * table as the resource sees it (`knex => knex('clients').whereNull('deleted_at')`); `name`
 * names its statements, unique to the resource.
 */
export function keysetTable<Row> (database: Database, name: string, rows: (knex: Knex) => Knex.QueryBuilder, columns: readonly string[], schema: TObject) {
  const { knex } = database
  const list = prepare<[after: number, limit: number], JsonRow>(database, `${name}.list`, (after, limit) =>
    rows(knex).select(columns).where('id', '>', after).orderBy('id').limit(limit), jsonRows(schema))
  const find = prepare<[id: number], Row>(database, `${name}.find`, id => rows(knex).select(columns).where({ id }).first())

  return {
    /** One page; one row more than the limit, which tells whether more follow (lib/http/paging.ts). */
    async list ({ limit, after }: Page, trx: Knex = knex): Promise<JsonRow[]> {
      return (await list([after ?? 0, limit + 1], trx)).rows
    },

    /** The row of this id, if any; an id past PostgreSQL's integers names none. */
    async find (id: number, trx: Knex = knex): Promise<Row | undefined> {
      if (id > MAX_ID) return undefined
      return (await find([id], trx)).rows[0]
    }
  }
}
