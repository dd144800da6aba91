import { setTimeout as sleep } from 'node:timers/promises'
import type pg from 'pg'
import { oncePerDatabase } from './once-per-database.js'

// The last position drawn (db/migrations/20261204000000_change_positions.ts).
/** The last position drawn, as an SQL expression: 0 before any. */
export const LAST_DRAWN = '(select case when is_called then last_value else 0 end from change_positions)'
// The last position drawn, then the transactions that hold a transaction id, in one
// statement: the subquery refers to the position read, so it runs after that read. Every
// transaction that drew up to it took its id first. Not a snapshot's in-flight ones
// (pg_snapshot_xip), which leave out those whose ids are past the last to end; nor
// pg_xact_status(), which says committed a moment before snapshots see it so. A backend's id
// is cleared as its transaction ends for every snapshot, and pg_stat_activity shows it to
// every role. Of this database only: another's transactions draw no position here. (A
// prepared transaction of two-phase commit holds its id apart from any backend: not
// supported beside the feed.) One round trip: under load each waits its turn in the pool.
const DRAWN_AND_IN_FLIGHT = `select newest.drawn::float8 as drawn,
    (select coalesce(array_agg(pid || ':' || backend_xid), '{}') from pg_stat_activity
      where backend_xid is not null and datname = current_database() and newest.drawn is not null) as xids
  from (select ${LAST_DRAWN} as drawn offset 0) newest`
// Those of them still in flight.
const STILL_IN_FLIGHT = 'select coalesce(array_agg(pid || \':\' || backend_xid), \'{}\') as xids from pg_stat_activity where pid || \':\' || backend_xid = any($1::text[])'

/** How long to wait between looks at transactions still in flight: from 1 ms, doubling, to 50. */
const FIRST_WAIT_MS = 1
const LONGEST_WAIT_MS = 50

/**
 * The settled position: the highest change position (an audit entry's or a change outbox
 * row's id) at or below which every row is final, committed or never to be. A reader that
 * shows rows up to it only, in position order, and asks next for those after the last it
 * showed, skips none (the migration says why).
 *
 * `settled()` answers a position measured after it was called, so a caller sees every change
 * committed before it asked. Callers that ask while a measurement waits to begin share it.
 * A measurement waits for every writing transaction in flight when it looks, even one that
 * draws no position: a transaction held open long holds readers back as long.
 */
export function settledPositions (pool: pg.Pool): () => Promise<number> {
  async function measure (): Promise<number> {
    const { drawn, xids: inFlight } = (await pool.query<{ drawn: number, xids: string[] }>(DRAWN_AND_IN_FLIGHT)).rows[0]!
    let xids = inFlight
    for (let wait = FIRST_WAIT_MS; xids.length > 0; wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
      await sleep(wait)
      xids = (await pool.query<{ xids: string[] }>(STILL_IN_FLIGHT, [xids])).rows[0]!.xids
    }
    return drawn
  }

  let underWay: Promise<unknown> = Promise.resolve()
  let waitingToBegin: Promise<number> | undefined
  return function settled () {
    if (waitingToBegin) return waitingToBegin
    const measurement = underWay.then(() => {
      waitingToBegin = undefined
      return measure()
    })
    waitingToBegin = measurement
    underWay = measurement.catch(() => undefined)
    return measurement
  }
}

/** The database's `settled()`, one a database: callers share its measurements. */
export const settledPosition = oncePerDatabase(database => settledPositions(database.pool))
