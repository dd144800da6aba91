import type { Database } from './prepared-query.js'

/**
 * `make`, called once a database and then remembered: a repository that several route folders
 * use is one object, whose caches (a list's count estimates) they share.
 */
export function oncePerDatabase<Args extends unknown[], Made> (make: (database: Database, ...args: Args) => Made): (database: Database, ...args: Args) => Made {
  const made = new WeakMap<Database, Made>()
  return (database, ...args) => {
    let value = made.get(database)
    if (value === undefined) made.set(database, value = make(database, ...args))
    return value
  }
}
