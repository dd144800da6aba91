import type { Knex } from 'knex'

/** The actions waiting on each open transaction or savepoint, in the order they came. */
const waiting = new WeakMap<Knex.Transaction, (() => void)[]>()

/**
 * Runs `action` once what was written through `db` is committed: at once outside a
 * transaction; inside one, once the outermost transaction commits, and never if it, or a
 * savepoint (`trx.transaction(...)`) the action was registered in, rolls back. Roll back by
 * throwing: a `trx.rollback()` without an error settles knex's promise as a commit does.
 */
export function afterCommit (db: Knex, action: () => void): void {
  if (db.isTransaction) wait(db as Knex.Transaction, [action])
  else action()
}

function wait (trx: Knex.Transaction, actions: (() => void)[]): void {
  const queued = waiting.get(trx)
  if (queued) {
    queued.push(...actions)
    return
  }
  waiting.set(trx, [...actions])
  trx.executionPromise.then(() => {
    const settled = waiting.get(trx)!
    waiting.delete(trx)
    // A savepoint released commits nothing: its actions wait on the transaction around it.
    if (trx.parentTransaction) wait(trx.parentTransaction, settled)
    else for (const run of settled) run()
  }, () => { waiting.delete(trx) })
}
