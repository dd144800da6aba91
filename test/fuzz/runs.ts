/**
 * How many cases a property runs: FUZZ_RUNS if set; the whole `full` with FUZZ=full (as
 * `.ci/run` sets); a quarter of it otherwise, so that `npm test` stays a loop of minutes.
 */
export function fuzzRuns (full: number): number {
  const { FUZZ, FUZZ_RUNS } = process.env
  if (FUZZ_RUNS !== undefined) {
    if (!/^[1-9]\d*$/.test(FUZZ_RUNS)) throw new Error(`FUZZ_RUNS must be a positive integer, not ${JSON.stringify(FUZZ_RUNS)}`)
    return Number(FUZZ_RUNS)
  }
  if (FUZZ !== undefined && FUZZ !== 'full') throw new Error(`FUZZ must be full or unset, not ${JSON.stringify(FUZZ)}`)
  return FUZZ === 'full' ? full : Math.ceil(full / 4)
}
