import type { LoggerOptions } from 'pino'

/** JSON lines for machines; readable lines only when a person watches a terminal. */
export function forTerminal<T extends LoggerOptions> (options: T): T {
  /* c8 ignore next -- the tests read the JSON lines, never a terminal */
  return process.stdout.isTTY ? { ...options, transport: { target: 'pino-pretty' } } : options
}

/**
 * Process warnings (a dependency's deprecation, such as pg's PG_INVALID_DATE) as log lines at
 * warn. Node prints them on stderr through a 'warning' listener of its own, which is removed
 * here rather than by `--no-warnings`, which every way of starting the service (npm start, the
 * image, the manifests) would have to pass: so every line the process writes is JSON.
 */
export function logProcessWarnings (logger: { warn: (fields: object, message: string) => void }): void {
  process.removeAllListeners('warning')
  process.on('warning', warning => logger.warn({ err: warning }, `process warning: ${warning.message}`))
}
