/** The longest wait between two attempts of a delivery, in milliseconds. */
const LONGEST_WAIT_MS = 6 * 3_600_000

/**
 * How long after its `attempts`-th failed attempt a delivery is tried again: `firstMs`, doubled
 * at each attempt up to 6 hours, times a random factor from 0.5 to 1.5, so that the deliveries
 * that failed together (an endpoint down) do not all come back at one instant. With the
 * default 5 s, some 23 attempts fit in the 3 days a delivery is retried.
 */
export function retryDelay (attempts: number, firstMs: number, random: () => number = Math.random): number {
  const wait = Math.min(firstMs * 2 ** Math.min(attempts - 1, 40), LONGEST_WAIT_MS)
  return Math.round(wait * (0.5 + random()))
}
