import type { LoggerOptions } from 'pino'

/** JSON lines for machines; readable lines only when a person watches a terminal. */
export function forTerminal<T extends LoggerOptions> (options: T): T {
  /* c8 ignore next -- the tests read the JSON lines, never a terminal */
  return process.stdout.isTTY ? { ...options, transport: { target: 'pino-pretty' } } : options
}
