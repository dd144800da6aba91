/**
 * How far a long transfer (`npm run import`, `npm run export`) has come, on standard error: on a
 * terminal, one line redrawn (a bar, rows, rate, time left); elsewhere (a log, CI), a plain line
 * every few seconds.
 */
export class Progress {
  private readonly started = performance.now()
  private lastPlain = Number.NEGATIVE_INFINITY
  private readonly terminal: boolean

  /** `what`: the transfer (`importing students.csv`); its rows (or its bytes, `ofBytes`) out of `total`, if known. */
  private readonly what: string
  private readonly total: number | undefined
  private readonly out: NodeJS.WriteStream

  constructor (what: string, total: number | undefined, out: NodeJS.WriteStream = process.stderr) {
    this.what = what
    this.total = total
    this.out = out
    this.terminal = out.isTTY === true
  }

  /** `rows` done so far, and `done` of `total` (rows, or bytes when the total is in bytes). */
  update (rows: number, done = rows): void {
    const now = performance.now()
    if (!this.terminal && now - this.lastPlain < PLAIN_EVERY_MS) return
    this.lastPlain = now
    const seconds = (now - this.started) / 1000
    const rate = rows / Math.max(seconds, 0.001)
    const share = this.total === undefined ? undefined : Math.min(1, done / Math.max(this.total, 1))
    const left = share === undefined || share === 0 ? undefined : seconds / share - seconds
    const parts = [
      `${rows.toLocaleString('en')} rows`,
      `${Math.round(rate).toLocaleString('en')} rows/s`,
      ...(left === undefined ? [] : [`${clock(left)} left`])
    ]
    if (this.terminal) {
      const bar = share === undefined ? '' : `${'█'.repeat(Math.round(share * BAR))}${' '.repeat(BAR - Math.round(share * BAR))} ${Math.floor(share * 100)}% `
      this.out.write(`\r\x1b[K${this.what} ${bar}${parts.join(' · ')}`)
    } else {
      this.out.write(`${this.what}: ${share === undefined ? '' : `${Math.floor(share * 100)}%, `}${parts.join(', ')}\n`)
    }
  }

  /** A word on what is happening now, after the last figures. */
  note (text: string): void {
    this.out.write(this.terminal ? `\r\x1b[K${this.what}: ${text}` : `${this.what}: ${text}\n`)
  }

  /** The last word: what was done, in how long. */
  finish (told: string): void {
    const seconds = (performance.now() - this.started) / 1000
    this.out.write(`${this.terminal ? '\r\x1b[K' : ''}${this.what}: ${told} in ${clock(seconds)}\n`)
  }
}

const BAR = 24
const PLAIN_EVERY_MS = 2_000

/** Seconds as m:ss (or h:mm:ss). */
function clock (seconds: number): string {
  const whole = Math.round(seconds)
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor(whole / 60) % 60, whole % 60]
  return h > 0 ? `${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}` : `${m}:${String(s).padStart(2, '0')}`
}
