import { Type, type StringOptions } from '@sinclair/typebox'

/** Years 0001 to 9999: PostgreSQL knows no year 0 (a pattern with no lookahead, for every regex engine). */
export const YEAR_PATTERN = '(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})'

/**
 * A timestamp as the service takes one, in a list's filter or a body: a real day and time (the
 * format), of at most microseconds, with an offset within ±15:59 (PostgreSQL's own limit) written
 * with its minutes (`+01` is no offset to JavaScript's Date). Every such text parses with
 * `Date.parse` as PostgreSQL reads it.
 */
export const timestampInput = (options: StringOptions = {}) => Type.String({
  format: 'date-time',
  maxLength: 40,
  pattern: `^${YEAR_PATTERN}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?([Zz]|[+-](0[0-9]|1[0-5]):?[0-5][0-9])$`,
  ...options
})
