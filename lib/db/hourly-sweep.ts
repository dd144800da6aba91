import type { FastifyInstance } from 'fastify'

const HOUR_MS = 60 * 60_000

/**
 * Runs `sweep` once an hour on every instance (two at once delete each row once) until the
 * app closes. A sweep that fails is logged and only delays the rows' going to the next hour.
 */
export function sweepHourly (fastify: FastifyInstance, what: string, sweep: () => Promise<unknown>): void {
  /* c8 ignore next 5 -- an hourly timer; what it runs is the plugin's sweep, which the tests call */
  const timer = setInterval(() => {
    sweep().catch((error: unknown) => {
      fastify.log.warn({ err: error }, `could not sweep ${what}`)
    })
  }, HOUR_MS).unref()
  fastify.addHook('onClose', async () => clearInterval(timer))
}
