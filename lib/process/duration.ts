/** A duration: a whole number with a unit, or plain seconds. One grammar for every variable and policy. */
const DURATION = /^(\d+)(ms|s|m|h|d)?$/
export const MS_PER_UNIT = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/** `ms` milliseconds in the largest unit that keeps them whole: 1s, 24d, 1500ms. */
export function spoken (ms: number): string {
  if (ms === 0) return '0'
  const unit = (['d', 'h', 'm', 's'] as const).find(unit => ms % MS_PER_UNIT[unit] === 0) ?? 'ms'
  return `${ms / MS_PER_UNIT[unit]}${unit}`
}

/** A duration's milliseconds (`90s`, `15m`, `250ms`, plain seconds); undefined if `text` is none. */
export function durationMs (text: string): number | undefined {
  const match = DURATION.exec(text)
  return match ? Number(match[1]) * MS_PER_UNIT[(match[2] ?? 's') as keyof typeof MS_PER_UNIT] : undefined
}
