import { readdir } from 'node:fs/promises'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import type { Knex } from 'knex'

const MIGRATIONS_DIR = path.join(import.meta.dirname, '..', '..', 'db', 'migrations')

/** A migration as the knex CLI lists it: by `file`. */
export interface MigrationFile { file: string }

/**
 * Lists db/migrations/ by name without the file extension, so that the same database
 * can be migrated from the TypeScript sources (tests) and from the compiled dist/.
 */
export const migrationSource: Knex.MigrationSource<MigrationFile> = {
  async getMigrations () {
    const files = await readdir(MIGRATIONS_DIR)
    return files
      .filter(file => /^\d.*\.(ts|js)$/.test(file) && !file.endsWith('.d.ts'))
      .map(file => file.replace(/\.(ts|js)$/, ''))
      .sort()
      .map(file => ({ file }))
  },
  getMigrationName (migration) {
    return migration.file
  },
  async getMigration (migration) {
    /* c8 ignore next -- the compiled dist/ loads .js, the tests the .ts sources */
    const ext = import.meta.url.endsWith('.ts') ? '.ts' : '.js'
    return import(pathToFileURL(path.join(MIGRATIONS_DIR, migration.file + ext)).href) as Promise<Knex.Migration>
  }
}
