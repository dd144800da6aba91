import { LruMap } from 'toad-cache'
import { DAY_SECONDS, samePolicy, type Rate, type RatePolicy, type Standing } from './rate-policy.js'

/** A take from a caller's shared bucket and day (db/migrations/20261212000000_rate_units_given_back.ts's `rate_take`). */
export interface TakeArgs {
  key: string
  /** The time, in ms since the epoch. */
  at: number
  policy: RatePolicy
  /** Granted at least, or nothing. */
  cost: number
  /** Granted at most. */
  wanted: number
  /** Units taken before and not spent, given back first. */
  returned: number
  /**
   * The policy they were taken under: they go back to the bucket only while its count is the
   * one it had (a lowered policy caps the bucket; they would lift it past its new count).
   */
  returnedUnder: RatePolicy | undefined
  /** Units charged whatever is left: the bucket may go below zero, and the caller then waits. */
  charge: number
}

/**
 * What a take left: the units granted, the bucket's tokens and the day's units used after it,
 * and when the day's last take granted units ahead (ms since the epoch; null: none), which the
 * instance that took them gives back within GIVE_BACK_MS if unspent.
 */
export interface Taken { granted: number, tokens: number, used: number, leasedAt: number | null }

/**
 * What the shared tables hold of a caller: the bucket as of its last take, and its refill a
 * second since (its last take's policy's; null: the policy's own), the day's use.
 */
export interface Held { tokens: number | null, takenAt: number | null, perSecond: number | null, used: number }

/** The database's side of the leases: takes, reads, and units given back in one statement. */
export interface RateStore {
  take (args: TakeArgs): Promise<Taken>
  read (key: string, at: number): Promise<Held>
  giveBack (at: number, units: ReadonlyArray<{ key: string, policy: RatePolicy, units: number }>): Promise<void>
}

export type Decision =
  | { allowed: true, standing: Standing }
  | {
    allowed: false
    standing: Standing
    /** Which is spent; `lent`: the quota, but for units taken ahead that may come back before midnight. */
    spent: 'rate' | 'quota' | 'lent'
    retryAfter: number
  }

/**
 * Units an instance took from a caller's shared bucket and day, for the caller's next requests
 * there: one round trip serves many requests. Those it has not spent within LEASE_MS are given
 * back, at its next take for the caller or by `giveBack`.
 */
interface Lease {
  /** The policy it was taken under: its units go back under it. */
  policy: RatePolicy
  units: number
  /** Units spent of the lease: the next is sized after them. */
  spent: number
  /** When the lease was taken, and the bucket's tokens and the day's use right after. */
  at: number
  tokens: number
  used: number
  /** When the day's last take granted units ahead (Taken's `leasedAt`), this lease's or another instance's. */
  leasedAt: number | null
  /**
   * A refusal, kept until it may end, so that a caller refused asks nothing of the database
   * until then, for a request of this cost or more.
   */
  refusal?: { until: number, cost: number }
  /** The take under way: the requests that find no units wait for it. */
  taking?: Promise<unknown>
}

/** How long units taken for a caller serve at most: the bound of what instances' views differ by. */
export const LEASE_MS = 1_000
/** How often an instance gives back the units of leases that serve no more (`giveBack`). */
export const GIVE_BACK_MS = 5 * LEASE_MS
/** A lease takes at most this share of the policy's count: other instances find the rest. */
const LEASE_SHARE = 8
/** A refusal is kept this long at least: a caller refused makes 20 takes a second at most, per instance. */
const REFUSAL_MS = 50
/** Callers whose units one statement gives back. */
const GIVEN_BACK = 1_000
/** A refusal is kept this long at most: units another instance gives back reach its caller by then. */
const LONGEST_REFUSAL_MS = GIVE_BACK_MS
/** Callers an instance keeps leases for; the least recently seen are forgotten (their units come back as the bucket refills). */
const CALLERS = 100_000

/** A bucket as of `at`: a lease's (refilled at its policy's rate), or the shared one's, refilled at `perSecond` when known. */
interface Bucket { at: number, tokens: number, perSecond?: number | null }

const DAY_MS = DAY_SECONDS * 1_000
const dayOf = (ms: number) => Math.floor(ms / DAY_MS)
/** The end of the UTC day of `ms` (the next midnight), in ms since the epoch. */
export const dayEnd = (ms: number) => (dayOf(ms) + 1) * DAY_MS
/** Whole seconds from `ms` to the end of its UTC day. */
const secondsToMidnight = (ms: number) => Math.ceil((dayEnd(ms) - ms) / 1_000)

/**
 * Rate limits and quotas held across instances: every unit spent was taken, under a row lock,
 * from the caller's bucket and day in PostgreSQL, so that no instance spends what another did;
 * an instance takes a few units ahead for a caller who keeps asking (a lease), sized after
 * what the caller spent of the last, at most an eighth of the policy. `store` is the
 * database's side (lib/limits/rate-store.ts); `now` is the clock (the tests set it).
 */
export class RateLeases {
  private readonly leases = new LruMap<Lease>(CALLERS)

  private readonly store: RateStore
  now: () => number

  constructor (store: RateStore, now: () => number = Date.now) {
    this.store = store
    this.now = now
  }

  /**
   * Spends `cost` units of `policy` for the caller `key`, or tells when they may be. A cost
   * above the policy's count is the count: a full bucket serves any request.
   */
  spend (key: string, policy: RatePolicy, cost: number): Promise<Decision> {
    const most = Math.min(cost, policy.rate?.count ?? Infinity, policy.quota ?? Infinity)
    const decided = this.spendHere(key, policy, most)
    return decided === undefined ? this.spendAtMost(key, policy, most) : Promise.resolve(decided)
  }

  /**
   * `spend` told by this instance alone, at once: a lease that serves, or a refusal it keeps;
   * undefined when the database is to be asked (or is being asked for the caller). A lease or
   * a refusal of another policy (the caller's role or key changed since) tells nothing: the
   * new policy holds from the caller's next request.
   */
  spendHere (key: string, policy: RatePolicy, cost: number): Decision | undefined {
    const lease = this.leases.get(key)
    if (lease === undefined || lease.taking !== undefined || !samePolicy(lease.policy, policy)) return undefined
    const now = this.now()
    if (this.serves(lease, now) && lease.units >= cost) {
      lease.units -= cost
      lease.spent += cost
      return { allowed: true, standing: this.standing(lease, policy, now) }
    }
    if (lease.refusal !== undefined && now < lease.refusal.until && cost >= lease.refusal.cost) return this.refused(lease, policy, cost, now, lease.refusal)
    return undefined
  }

  private async spendAtMost (key: string, policy: RatePolicy, cost: number): Promise<Decision> {
    const lease = this.leases.get(key)
    if (lease?.taking !== undefined) {
      await lease.taking
      return this.spendHere(key, policy, cost) ?? this.spendAtMost(key, policy, cost)
    }
    return this.takeLease(key, policy, cost, lease, this.now())
  }

  /** The refusal this instance keeps for `key` now, if any: told without asking the database. */
  refusing (key: string, policy: RatePolicy): Decision | undefined {
    const lease = this.leases.get(key)
    const now = this.now()
    if (lease?.refusal === undefined || now >= lease.refusal.until || !samePolicy(lease.policy, policy) || lease.units >= lease.refusal.cost) return undefined
    return this.refused(lease, policy, lease.refusal.cost, now, lease.refusal)
  }

  /**
   * Charges `units` to `key` whatever is left: a cost known once its request has run (the rows
   * of an import or an export), or, negative, units given back (a request refused by another
   * of its allowances, or answered 503). Units given back to a lease that serves join it, at
   * once: the caller's next requests here spend them, none refused for want of them meanwhile.
   * Otherwise this instance's units go back with the charge, and its next request takes anew.
   */
  async charge (key: string, policy: RatePolicy, units: number): Promise<void> {
    const lease = this.leases.get(key)
    if (lease?.taking !== undefined) {
      await lease.taking
      return this.charge(key, policy, units)
    }
    const now = this.now()
    if (units < 0 && lease !== undefined && this.serves(lease, now) && samePolicy(lease.policy, policy)) {
      lease.units -= units
      lease.spent = Math.max(0, lease.spent + units)
      // A refusal kept meanwhile held for want of these units.
      delete lease.refusal
      return
    }
    const returned = this.unspent(lease, now)
    this.leases.delete(key)
    await this.store.take({ key, at: now, policy, cost: 0, wanted: 0, returned, returnedUnder: lease?.policy, charge: units })
  }

  /**
   * The units of `lease` to give back now, which it holds no more: none of a lease taken on
   * another UTC day, whose units that day's quota counted (today's would gain them).
   */
  private unspent (lease: Lease | undefined, now: number): number {
    if (lease === undefined) return 0
    const units = dayOf(lease.at) === dayOf(now) ? lease.units : 0
    lease.units = 0
    return units
  }

  /**
   * Gives back the units of the leases a second old, which their callers may never come back
   * for (every lease's with `all`, as the instance closes), in one statement: otherwise a
   * caller who stops would find them spent from the day's quota.
   */
  async giveBack (all = false): Promise<void> {
    const now = this.now()
    const units: Array<{ key: string, policy: RatePolicy, units: number }> = []
    for (const key of [...this.leases.keys()]) {
      const lease = this.leases.get(key)!
      if (lease.taking !== undefined || (!all && this.serves(lease, now))) continue
      const unspent = this.unspent(lease, now)
      if (unspent > 0) units.push({ key, policy: lease.policy, units: unspent })
      // A caller gone quiet is forgotten, unless a refusal of theirs still holds.
      if ((lease.refusal?.until ?? 0) <= now) this.leases.delete(key)
    }
    // In statements of at most GIVEN_BACK callers: each holds its rows' locks until it ends.
    for (let start = 0; start < units.length; start += GIVEN_BACK) await this.store.giveBack(now, units.slice(start, start + GIVEN_BACK))
  }

  /**
   * What is left of `policy` for `key`: the shared tables' view, with this instance's units
   * not spent yet, which it gives back if nobody spends them (another instance's count as
   * spent until they are given back).
   */
  async usage (key: string, policy: RatePolicy): Promise<Standing & { used: number }> {
    const now = this.now()
    const held = await this.store.read(key, now)
    const lease = this.leases.get(key)
    const units = lease !== undefined && dayOf(lease.at) === dayOf(now) ? lease.units : 0
    const bucket = held.tokens === null ? undefined : { at: held.takenAt!, tokens: held.tokens, perSecond: held.perSecond }
    return { ...this.figures(policy, now, bucket, held.used, units), used: held.used - units }
  }

  private serves (lease: Lease, now: number): boolean {
    return now < lease.at + LEASE_MS && dayOf(now) === dayOf(lease.at)
  }

  private async takeLease (key: string, policy: RatePolicy, cost: number, previous: Lease | undefined, now: number): Promise<Decision> {
    const most = Math.max(cost, Math.floor(Math.min(policy.rate?.count ?? Infinity, policy.quota ?? Infinity) / LEASE_SHARE))
    const wanted = Math.min(most, Math.max(cost, 2 * (previous?.spent ?? 0)))
    const returned = this.unspent(previous, now)
    const lease: Lease = { policy, units: 0, spent: 0, at: now, tokens: 0, used: 0, leasedAt: null }
    const taking = this.store.take({ key, at: now, policy, cost, wanted, returned, returnedUnder: previous?.policy, charge: 0 })
    lease.taking = taking
    this.leases.set(key, lease)
    let taken: Taken
    try {
      taken = await taking
    } catch (error) {
      this.leases.delete(key)
      throw error
    } finally {
      delete lease.taking
    }
    Object.assign(lease, { tokens: taken.tokens, used: taken.used, leasedAt: taken.leasedAt })
    if (taken.granted === 0) return this.refused(lease, policy, cost, now)
    lease.units = taken.granted - cost
    lease.spent = cost
    return { allowed: true, standing: this.standing(lease, policy, now) }
  }

  /** The refusal of `cost` units; a refusal the database gave (none `kept`) is kept until it may end. */
  private refused (lease: Lease, policy: RatePolicy, cost: number, now: number, kept?: Lease['refusal']): Decision {
    const standing = this.standing(lease, policy, now)
    const quotaSpent = policy.quota !== null && policy.quota - lease.used < cost
    const back = quotaSpent ? this.lentBack(lease, now) : 0
    const lent = back > now
    const waitMs = quotaSpent
      ? (lent ? back : dayEnd(now)) - now
      : (cost - this.units(policy.rate!, now, lease, lease.units)) * policy.rate!.windowSeconds * 1_000 / policy.rate!.count
    // Kept to the millisecond (a second's wait of Retry-After would leave a fast bucket's
    // units unspent meanwhile), and for REFUSAL_MS at least, which bounds the takes of a
    // caller who keeps asking while refused; for LONGEST_REFUSAL_MS at most (a day's quota
    // may have units given back by other instances).
    lease.refusal = kept ?? { until: now + Math.min(LONGEST_REFUSAL_MS, Math.max(REFUSAL_MS, waitMs)), cost }
    // Refused, fewer units than the request asked are left, whatever refilled while the
    // refusal is kept: a client reading `r` does not send it again at once.
    const spent = quotaSpent ? standing.quota! : standing.rate!
    spent.remaining = Math.min(spent.remaining, cost - 1)
    return { allowed: false, standing, spent: lent ? 'lent' : quotaSpent ? 'quota' : 'rate', retryAfter: Math.max(1, Math.ceil(waitMs / 1_000)) }
  }

  /**
   * When the units last taken ahead today (by another instance, or by this one's lease that
   * ended) are given back at the latest, if unspent: a spent quota is refused until then while
   * it is to come, else until midnight UTC.
   */
  private lentBack (lease: Lease, now: number): number {
    return lease.leasedAt === null || dayOf(lease.leasedAt) !== dayOf(now) ? 0 : lease.leasedAt + LEASE_MS + GIVE_BACK_MS
  }

  private standing (lease: Lease, policy: RatePolicy, now: number): Standing {
    return this.figures(policy, now, lease, lease.used, lease.units)
  }

  /**
   * The caller's units of the rate now, as this instance knows them: the bucket as it was left
   * at `bucket.at`, refilled since (at the rate of its last take's policy, as rate_take does),
   * with the units this instance holds; a full bucket at most.
   */
  private units ({ count, windowSeconds }: Rate, now: number, bucket: Bucket | undefined, units: number): number {
    return bucket === undefined ? count : Math.min(count, bucket.tokens + Math.max(0, now - bucket.at) / 1_000 * (bucket.perSecond ?? count / windowSeconds) + units)
  }

  private figures (policy: RatePolicy, now: number, bucket: Bucket | undefined, used: number, units: number): Standing {
    const standing: Standing = {}
    if (policy.rate !== null) {
      const { count, windowSeconds } = policy.rate
      const tokens = this.units(policy.rate, now, bucket, units)
      // A millionth of a unit short is a unit, as rate_take has it.
      const remaining = Math.max(0, Math.floor(tokens + 1e-6))
      // Seconds until the next whole unit is in: none while the bucket is full.
      standing.rate = remaining >= count ? { remaining } : { remaining, reset: Math.ceil((Math.max(1, remaining + 1) - tokens) * windowSeconds / count) }
    }
    if (policy.quota !== null) standing.quota = { remaining: Math.max(0, policy.quota - used + units), reset: secondsToMidnight(now) }
    return standing
  }
}
