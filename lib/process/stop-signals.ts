/** What stops the service: SIGTERM (a supervisor, `docker stop`, Kubernetes) or SIGINT (Ctrl-C). */
export type StopSignal = 'SIGTERM' | 'SIGINT'

export interface StopSignals {
  /**
   * Calls `stop` with the first SIGTERM or SIGINT, at once if one came already; any later one
   * is ignored, so that a second SIGTERM does not cut short a shutdown under way.
   */
  onStop: (stop: (signal: StopSignal) => void) => void
}

/**
 * Catches SIGTERM and SIGINT from now on, before anything else is loaded: the application's
 * modules take a while to load, and a signal then would end the process with no word (a
 * worker so ended would count as one that failed to stop). The signal is kept until the
 * process knows what to stop.
 */
export function catchStopSignals (): StopSignals {
  let received: StopSignal | undefined
  let stop: ((signal: StopSignal) => void) | undefined
  const caught = (signal: StopSignal) => {
    if (received) return
    received = signal
    stop?.(signal)
  }
  process.on('SIGTERM', caught)
  process.on('SIGINT', caught)
  return {
    onStop (callback) {
      stop = callback
      if (received) callback(received)
    }
  }
}
