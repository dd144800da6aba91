/** How many times a write is tried in all when PostgreSQL ends it to break a deadlock. */
const DEADLOCK_TRIES = 3

/** Whether the error is PostgreSQL's deadlock_detected: the statement was chosen to fail, and nothing of it stands. */
const isDeadlock = (error: unknown) => (error as { code?: string }).code === '40P01'

/**
 * `work`, tried again (DEADLOCK_TRIES in all) when PostgreSQL ends it as a deadlock's victim:
 * the other side then goes on, and the next try waits for it instead. `again` undoes what the
 * failed try began, first (a rollback to a savepoint; nothing for a statement of its own).
 */
export async function retriedOnDeadlock<T> (work: () => Promise<T>, again: () => Promise<unknown> = async () => {}, attempt = 1): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (!isDeadlock(error) || attempt === DEADLOCK_TRIES) throw error
  }
  await again()
  return retriedOnDeadlock(work, again, attempt + 1)
}
