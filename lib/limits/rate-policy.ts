import { durationMs } from '../process/duration.js'

/**
 * A rate: `count` units per `windowSeconds`, enforced as a bucket that holds `count` and
 * refills evenly over the window, so that a burst of up to `count` passes at once.
 */
export interface Rate { count: number, windowSeconds: number }

/** What a caller may spend: a rate, a quota of units a UTC day, either or both. */
export interface RatePolicy {
  /** Its name in the RateLimit fields, the usage and the metrics: `default`. */
  name: string
  rate: Rate | null
  /** Units a UTC day. */
  quota: number | null
}

export const DAY_SECONDS = 86_400
const MOST = 1_000_000_000

/** A `<count>/<duration>` (`600/1m`, `20/10s`), null for `off`, or what is wrong with `text`. */
export function parseRate (text: string): Rate | null | string {
  if (text === 'off') return null
  const [count, window, ...more] = text.split('/')
  const ms = window === undefined || more.length > 0 ? undefined : durationMs(window)
  if (!/^\d+$/.test(count!) || ms === undefined) return 'must be <count>/<duration> (600/1m, 20/10s), or off'
  if (Number(count) < 1 || Number(count) > MOST) return `must count from 1 to ${MOST}`
  if (ms % 1_000 !== 0 || ms < 1_000 || ms > DAY_SECONDS * 1_000) return 'must have a window of whole seconds, from 1s to 1d'
  return { count: Number(count), windowSeconds: ms / 1_000 }
}

/** A `<count>/1d` (`10000/1d`), null for `off`, or what is wrong with `text`. */
export function parseQuota (text: string): number | null | string {
  const rate = parseRate(text)
  if (rate === null || typeof rate === 'string') return rate
  return rate.windowSeconds === DAY_SECONDS ? rate.count : 'must be <count>/1d (10000/1d), or off'
}

/** The name of a policy's daily quota in the RateLimit fields. */
const quotaName = (policy: RatePolicy) => `${policy.name}-daily`

/**
 * The `RateLimit-Policy` field of a policy, in the structured-field form of
 * draft-ietf-httpapi-ratelimit-headers-10: `"default";q=600;w=60, "default-daily";q=10000;w=86400`.
 */
export function policyField (policy: RatePolicy): string {
  const items: string[] = []
  if (policy.rate) items.push(`"${policy.name}";q=${policy.rate.count};w=${policy.rate.windowSeconds}`)
  if (policy.quota !== null) items.push(`"${quotaName(policy)}";q=${policy.quota};w=${DAY_SECONDS}`)
  return items.join(', ')
}

/** What is left of a policy for a caller, as one instance knows it. */
export interface Standing {
  /** Units left in the bucket, and seconds until one more is (absent when it is full). */
  rate?: { remaining: number, reset?: number }
  /** Units left of the day's quota, and seconds until the UTC day ends. */
  quota?: { remaining: number, reset: number }
}

/** The `RateLimit` field (the same draft): `"default";r=598;t=1, "default-daily";r=9998;t=43210`. */
export function limitField (policy: RatePolicy, standing: Standing): string {
  const items: string[] = []
  if (standing.rate) items.push(`"${policy.name}";r=${standing.rate.remaining}${standing.rate.reset === undefined ? '' : `;t=${standing.rate.reset}`}`)
  if (standing.quota) items.push(`"${quotaName(policy)}";r=${standing.quota.remaining};t=${standing.quota.reset}`)
  return items.join(', ')
}
