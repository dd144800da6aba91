import { durationMs, spoken } from '../process/duration.js'

/**
 * A rate: `count` units per `windowSeconds`, enforced as a bucket that holds `count` and
 * refills evenly over the window, so that a burst of up to `count` passes at once.
 */
export interface Rate { count: number, windowSeconds: number }

/** What a caller may spend: a rate, a quota of units a UTC day, either or both. */
export interface RatePolicy {
  /** Its rate's name in the RateLimit fields, the usage and the metrics: `default`, a role's, `key`. */
  name: string
  rate: Rate | null
  /** Units a UTC day. */
  quota: number | null
  /** Its quota's name: `default-daily`, a role's, `key-daily`. */
  quotaName: string
}

export const DAY_SECONDS = 86_400
const MOST = 1_000_000_000

/**
 * A `<count>/<duration>` (`600/1m`, `20/10s`), null for `off` where `off` is allowed (a key's
 * policy has no `off`: it never lifts its owner's), or what is wrong with `text`.
 */
export function parseRate (text: string, off = true): Rate | null | string {
  if (off && text === 'off') return null
  const [count, window, ...more] = text.split('/')
  const ms = window === undefined || more.length > 0 ? undefined : durationMs(window)
  if (!/^\d+$/.test(count!) || ms === undefined) return `must be <count>/<duration> (600/1m, 20/10s)${off ? ', or off' : ''}`
  if (Number(count) < 1 || Number(count) > MOST) return `must count from 1 to ${MOST}`
  if (ms % 1_000 !== 0 || ms < 1_000 || ms > DAY_SECONDS * 1_000) return 'must have a window of whole seconds, from 1s to 1d'
  return { count: Number(count), windowSeconds: ms / 1_000 }
}

/** A `<count>/1d` (`10000/1d`), null for `off` where allowed, or what is wrong with `text`. */
export function parseQuota (text: string, off = true): number | null | string {
  const rate = parseRate(text, off)
  if (rate === null || typeof rate === 'string') return rate
  return rate.windowSeconds === DAY_SECONDS ? rate.count : `must be <count>/1d (10000/1d)${off ? ', or off' : ''}`
}

/** The policy of `rate` and `quota` named `name` (and `name-daily` for its quota). */
export const namedPolicy = (name: string, rate: Rate | null, quota: number | null): RatePolicy => ({ name, rate, quota, quotaName: `${name}-daily` })

/**
 * Whether `a` and `b` are one policy: the same object, or read anew with the same parts (a
 * caller's next token, a cache refilled) and so to be spent as one.
 */
export const samePolicy = (a: RatePolicy, b: RatePolicy) => a === b ||
  (a.name === b.name && a.quotaName === b.quotaName && a.quota === b.quota && a.rate?.count === b.rate?.count && a.rate?.windowSeconds === b.rate?.windowSeconds)

/**
 * `sent` as a change of the stored `stored` (a rate or a quota): undefined where it is the same
 * policy, in the same words or others (`5/10` for `5/10s`, `10000/24h` for `10000/1d`), so that
 * a write that changes nothing keeps the words stored and is audited as no change.
 */
export function policyChange (stored: string | null, sent: string | null | undefined): string | null | undefined {
  if (sent === undefined || sent === stored) return undefined
  if (sent === null || stored === null) return sent
  return JSON.stringify(parseRate(sent)) === JSON.stringify(parseRate(stored)) ? undefined : sent
}

/** Whether the policy limits anything. */
export const limits = (policy: RatePolicy) => policy.rate !== null || policy.quota !== null

/** A role's or a key's policy as stored: `600/1m` or `off`, `10000/1d` or `off`; null: none of its own. */
export interface OwnPolicy { rate_limit: string | null, rate_quota: string | null }

/** A role's policy as the token check reads it, beside the role's name. */
export interface RolePolicy extends OwnPolicy { name: string }

/**
 * The name a role's rate goes by in the RateLimit fields (a structured-field String, of ASCII),
 * the usage and the metrics' labels: `role:` and the role's name percent-encoded as in a URL
 * (`Partner Sync`: `role:Partner%20Sync`), its quota's the same with `-daily`. One name for one
 * role, never `default`'s or `key`'s: a name's `-daily` at its end is encoded (`%2Ddaily`), so
 * that no rate's name is another role's quota's.
 */
export function roleLabel (roleName: string): string {
  const encoded = encodeURIComponent(roleName)
  return `role:${encoded.endsWith('-daily') ? `${encoded.slice(0, -'-daily'.length)}%2Ddaily` : encoded}`
}

/** Whether rate `a` allows more than `b`: more units a second, then a larger burst; null (none) the most. */
export function moreGenerous (a: Rate | null, b: Rate | null): boolean {
  if (a === null || b === null) return a === null && b !== null
  // Cross-multiplied: integers below 2^53 (a billion units, a day's seconds), compared exactly.
  const sustained = a.count * b.windowSeconds - b.count * a.windowSeconds
  return sustained > 0 || (sustained === 0 && a.count > b.count)
}

/**
 * A user's policy: per part, the most generous of their roles' (a role without one of its own
 * has `fallback`'s, RATE_LIMIT's and RATE_QUOTA's); `fallback` for a user of no role. A part
 * stored in a form the service does not read (written outside it) counts as none of its own.
 */
export function userPolicy (fallback: RatePolicy, roles: readonly RolePolicy[]): RatePolicy {
  if (roles.length === 0) return fallback
  let rate = { name: fallback.name, rate: fallback.rate }
  let quota = { name: fallback.quotaName, quota: fallback.quota }
  roles.forEach((role, i) => {
    const ownRate = role.rate_limit === null ? undefined : parseRate(role.rate_limit)
    const roleRate = ownRate === undefined || typeof ownRate === 'string' ? { name: fallback.name, rate: fallback.rate } : { name: roleLabel(role.name), rate: ownRate }
    if (i === 0 || moreGenerous(roleRate.rate, rate.rate)) rate = roleRate
    const ownQuota = role.rate_quota === null ? undefined : parseQuota(role.rate_quota)
    const roleQuota = ownQuota === undefined || typeof ownQuota === 'string' ? { name: fallback.quotaName, quota: fallback.quota } : { name: `${roleLabel(role.name)}-daily`, quota: ownQuota }
    if (i === 0 || (quota.quota !== null && (roleQuota.quota === null || roleQuota.quota > quota.quota))) quota = roleQuota
  })
  // The default itself when it is what applies: its fields are written once (plugins/app/rate-limits.ts).
  if (rate.name === fallback.name && rate.rate === fallback.rate && quota.name === fallback.quotaName && quota.quota === fallback.quota) return fallback
  return { name: rate.name, rate: rate.rate, quota: quota.quota, quotaName: quota.name }
}

/**
 * A key's own policy, spent beside its owner's (so never more than theirs): named `key` and
 * `key-daily`; undefined for a key of none. A part the service does not read counts as none.
 */
export function keyPolicy (own: OwnPolicy): RatePolicy | undefined {
  const rate = own.rate_limit === null ? null : parseRate(own.rate_limit, false)
  const quota = own.rate_quota === null ? null : parseQuota(own.rate_quota, false)
  const policy = namedPolicy('key', typeof rate === 'string' ? null : rate, typeof quota === 'string' ? null : quota)
  return limits(policy) ? policy : undefined
}

/**
 * What is wrong with the parts of a policy a client sets (a role's, with `off`; a key's, with
 * none): by field, none if nothing.
 */
export function ownPolicyProblems (own: Partial<OwnPolicy>, off: boolean): Record<string, string[]> {
  const problems: Record<string, string[]> = {}
  const rate = typeof own.rate_limit === 'string' ? parseRate(own.rate_limit, off) : null
  if (typeof rate === 'string') problems.rate_limit = [rate]
  const quota = typeof own.rate_quota === 'string' ? parseQuota(own.rate_quota, off) : null
  if (typeof quota === 'string') problems.rate_quota = [quota]
  return problems
}

/** What of a key's own policy is above its owner's, by field (a key that asks more than its owner has is refused). */
export function aboveOwner (key: RatePolicy, owner: RatePolicy): Record<string, string[]> {
  const above: Record<string, string[]> = {}
  if (key.rate !== null && moreGenerous(key.rate, owner.rate)) above.rate_limit = [`must allow no more than the owner's rate limit, ${owner.rate!.count}/${spoken(owner.rate!.windowSeconds * 1_000)}`]
  if (key.quota !== null && owner.quota !== null && key.quota > owner.quota) above.rate_quota = [`must allow no more than the owner's daily quota, ${owner.quota}/1d`]
  return above
}

/**
 * The `RateLimit-Policy` field of a policy, in the structured-field form of
 * draft-ietf-httpapi-ratelimit-headers-10: `"default";q=600;w=60, "default-daily";q=10000;w=86400`.
 */
export function policyField (policy: RatePolicy): string {
  const items: string[] = []
  if (policy.rate) items.push(`"${policy.name}";q=${policy.rate.count};w=${policy.rate.windowSeconds}`)
  if (policy.quota !== null) items.push(`"${policy.quotaName}";q=${policy.quota};w=${DAY_SECONDS}`)
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
  if (standing.quota) items.push(`"${policy.quotaName}";r=${standing.quota.remaining};t=${standing.quota.reset}`)
  return items.join(', ')
}
