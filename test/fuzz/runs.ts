/**
 * How many cases a property runs: FUZZ_RUNS if set; the whole `full` with FUZZ=full (as
 * `.ci/run` sets); a quarter of it otherwise, so that `npm test` stays a loop of minutes.
 */
export function fuzzRuns (full: number): number {
  if (process.env.FUZZ_RUNS !== undefined) return Number(process.env.FUZZ_RUNS)
  return process.env.FUZZ === 'full' ? full : Math.ceil(full / 4)
}
