import type { Knex } from 'knex'

/**
 * Every sortable field of a list (lib/http/list-query.ts) gets an index on `(field, id)`: a
 * keyset page in that order, either direction, is then an index scan from the cursor on, as
 * cheap deep in a million rows as on the first page. Lists of clients and users show live rows
 * only, and so do their indexes.
 */
const SORTS: { table: string, columns: string[], where?: string }[] = [
  { table: 'students', columns: ['name', 'age', 'dob', 'created_at'] },
  { table: 'clients', columns: ['name', 'city', 'created_at'], where: 'deleted_at is null' },
  { table: 'users', columns: ['name', 'created_at'], where: 'deleted_at is null' },
  { table: 'roles', columns: ['name', 'created_at'] }
]

/** `contains` and `starts_with` on these are served by trigram indexes, where pg_trgm is available. */
const SEARCHED = [{ table: 'students', column: 'name' }, { table: 'clients', column: 'name' }]

const indexName = (table: string, column: string, kind: string) => `${table}_${column}_${kind}`

// Built in the migration's transaction, which holds off writes to the table while an index
// builds: seconds for a million rows. On a larger table, build them by hand first with CREATE
// INDEX CONCURRENTLY under these names (docs/deployment.md); the migration then skips them.
// (Concurrent builds here would wait on the other instances, which wait for this migration.)

export async function up (knex: Knex): Promise<void> {
  for (const { table, columns, where } of SORTS) {
    for (const column of columns) {
      await knex.raw(`create index if not exists ?? on ?? (??, id)${where ? ` where ${where}` : ''}`, [indexName(table, column, 'keyset'), table, column])
    }
  }
  // pg_trgm ships with PostgreSQL's contrib, which most installations have and which is trusted
  // (a database owner may create it). Where it is missing or refused, lists still filter,
  // reading the table: the savepoint keeps the migration's transaction alive.
  const [available] = (await knex.raw('select 1 from pg_available_extensions where name = \'pg_trgm\'')).rows
  /* c8 ignore next -- both PostgreSQLs the tests use have it */
  if (!available) return
  await knex.raw('savepoint pg_trgm')
  try {
    await knex.raw('create extension if not exists pg_trgm')
  /* c8 ignore next 4 -- the tests run as a superuser */
  } catch {
    await knex.raw('rollback to savepoint pg_trgm')
    return
  }
  for (const { table, column } of SEARCHED) {
    await knex.raw('create index if not exists ?? on ?? using gin (?? gin_trgm_ops)', [indexName(table, column, 'trgm'), table, column])
  }
}

export async function down (knex: Knex): Promise<void> {
  for (const { table, column } of SEARCHED) await knex.raw('drop index if exists ??', [indexName(table, column, 'trgm')])
  for (const { table, columns } of SORTS) {
    for (const column of columns) await knex.raw('drop index if exists ??', [indexName(table, column, 'keyset')])
  }
}
