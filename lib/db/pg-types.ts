import pg from 'pg'

const { builtins, getTypeParser } = pg.types
const parseTimestamp = getTypeParser(builtins.TIMESTAMPTZ)

/**
 * What every connection asks of the server: timestamps written in UTC and dates as
 * `YYYY-MM-DD`, whatever the server's or the database's settings.
 */
export const SESSION_SETTINGS = { TimeZone: 'UTC', DateStyle: 'ISO' } as const

/** SESSION_SETTINGS as the `options` startup parameter that PostgreSQL reads. */
export const SESSION_OPTIONS = Object.entries(SESSION_SETTINGS).map(([name, value]) => `-c ${name}=${value}`).join(' ')

const DASH = 45
const SPACE = 32
const DOT = 46

/**
 * A timestamptz as ISO 8601 in UTC with milliseconds. In a UTC session PostgreSQL writes
 * `2026-11-22 09:30:00.123456+00`, which slicing turns into `2026-11-22T09:30:00.123Z`
 * far faster than a Date (docs/performance.md). Any other form (another offset, a year
 * past 9999 or BC) goes through a Date. Fractions are cut to milliseconds, as
 * a Date cuts them.
 */
export function isoTimestamp (text: string): string {
  const length = text.length
  if (length >= 22 && length <= 29 && text.charCodeAt(4) === DASH && text.charCodeAt(10) === SPACE && text.endsWith('+00')) {
    const day = text.slice(0, 10)
    const time = text.slice(11, 19)
    if (length === 22) return `${day}T${time}.000Z`
    if (length > 23 && text.charCodeAt(19) === DOT) return `${day}T${time}.${(text.slice(20, length - 3) + '00').slice(0, 3)}Z`
  }
  return (parseTimestamp(text) as Date).toISOString()
}

/** Dates stay `YYYY-MM-DD` text and timestamps become ISO 8601 UTC strings, whatever the time zones. */
export const types = {
  getTypeParser (oid: number, format?: string) {
    if (oid === builtins.DATE) return (value: string) => value
    if (oid === builtins.TIMESTAMPTZ) return isoTimestamp
    return getTypeParser(oid, format as 'text')
  }
}

/** SQL writing a timestamptz `expression` as `isoTimestamp` does, in a JSON value PostgreSQL builds. */
export const isoText = (expression: string) => `to_char(${expression} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
