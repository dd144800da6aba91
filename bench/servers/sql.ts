// The SQL the service's knex queries produce for the benchmarked routes, so that the ceiling
// and the peer run exactly the same statements.
import pg from 'pg'
import { SESSION_OPTIONS, types } from '../../lib/db/pg-types.js'

const COLUMNS = '"id", "name", "email", "age", "dob", "created_at", "updated_at"'

export const SQL = {
  byId: `select ${COLUMNS} from "students" where "id" = $1 limit $2`,
  page: `select ${COLUMNS} from "students" where "id" > $1 order by "id" asc limit $2`,
  insert: `insert into "students" ("age", "dob", "email", "name") values ($1, $2, $3, $4) returning ${COLUMNS}`,
  credentials: 'select "u"."id", "u"."password" from "users" as "u" where "u"."deleted_at" is null and "u"."email_key" = $1 limit $2'
}

/** The database of DB_HOST … DB_PASSWORD, and the pool size DB_POOL_MAX, as the ceilings take them. */
export function connection () {
  return {
    host: process.env.DB_HOST,
    port: Number(process.env.DB_PORT ?? 5432),
    database: process.env.DB_NAME,
    user: process.env.DB_USER,
    password: process.env.DB_PASSWORD,
    max: Number(process.env.DB_POOL_MAX ?? 10)
  }
}

/** A pg pool on that database, with the service's session and type parsers. */
export function pool (): pg.Pool {
  return new pg.Pool({ ...connection(), options: SESSION_OPTIONS, types })
}
