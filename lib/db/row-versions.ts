import type { Knex } from 'knex'

/**
 * A row's version is PostgreSQL's `xmin`: the transaction that wrote the row as it stands,
 * which every update changes, with no column to keep up. A record of one table is tagged with
 * it (lib/http/entity-tags.ts versionTag). The write path (plugins/app/write-path.ts) checks an
 * `If-Match` against the row as it reads it under its lock: of two writers holding the same
 * tag, the second waits for the first, then finds the row at another version (412).
 */
export function versionColumn (knex: Knex, table?: string): Knex.Raw {
  return knex.raw(`${table === undefined ? '' : `${table}.`}xmin::text as version`)
}

/** What a record of one table carries besides its fields: its version. */
export type Versioned<Row> = Row & { version: string }
