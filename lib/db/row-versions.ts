import type { Knex } from 'knex'
import { strongOpaques, type TagList } from '../http/entity-tags.js'

/**
 * A row's version is PostgreSQL's `xmin`: the transaction that wrote the row as it stands,
 * which every update changes, with no column to keep up. A record of one table is tagged with
 * it (lib/http/entity-tags.ts versionTag), and an `If-Match` on it becomes a condition of the
 * write's own statement: of two writers holding the same tag, the second finds the row at
 * another version and writes nothing.
 */
export function versionColumn (knex: Knex, table?: string): Knex.Raw {
  return knex.raw(`${table === undefined ? '' : `${table}.`}xmin::text as version`)
}

/** What a record of one table carries besides its fields: its version. */
export type Versioned<Row> = Row & { version: string }

/**
 * The versions an `If-Match` allows: undefined for none or `*` (any version), else the values
 * of its strong tags (a weak tag matches nothing).
 */
export function allowedVersions (tags: TagList | undefined): string[] | undefined {
  return tags === undefined || tags === '*' ? undefined : strongOpaques(tags)
}

/** A write's statement, limited to the allowed versions of its row. */
export function atVersion<Q extends Knex.QueryBuilder> (query: Q, versions: string[] | undefined): Q {
  if (versions === undefined) return query
  return query.whereRaw('xmin::text = any(?)', [versions]) as Q
}
