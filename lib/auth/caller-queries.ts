import type { Knex } from 'knex'
import { prepare, type Database } from '../db/prepared-query.js'
import type { OwnPolicy, RolePolicy } from '../limits/rate-policy.js'
import { apiKeyHash } from './api-keys.js'
import { LastUse } from './last-use.js'

/** What a key's check finds: whose it is, what it may do now, and until when; its policy, and its owner's roles'. */
export interface KeyCaller extends OwnPolicy {
  id: number
  user_id: number
  permissions: string[]
  /** Seconds since the epoch, or null for a key that does not expire. */
  expires_at: number | null
  roles: RolePolicy[]
  /** Whether the owner has a second factor. */
  mfa: boolean
}

/** What a token's check finds: what its user may do, and their roles' policies. */
export interface TokenCaller {
  permissions: string[]
  roles: RolePolicy[]
  /** Whether the user has a second factor (MFA_REQUIRED_ROLES). */
  mfa: boolean
}

/** The policies of the roles of the user `u.id` (lib/limits/rate-policy.ts's userPolicy). */
const ROLE_POLICIES = `(select coalesce(json_agg(json_build_object('name', r.name, 'rate_limit', r.rate_limit, 'rate_quota', r.rate_quota) order by r.id), '[]')
      from user_roles ur join roles r on r.id = ur.role_id where ur.user_id = u.id) as roles`

/** Whether the user `u.id` has a confirmed authenticator app, as `mfa`: what MFA_REQUIRED_ROLES asks, and what a login waits for. */
export const HAS_FACTOR = 'exists (select from totp_factors f where f.user_id = u.id and f.confirmed_at is not null) as mfa'

/** The policies of the roles of user `userId`, as a token's check reads them, in `db` (a transaction sees its own writes). */
export async function rolePolicies (db: Knex, userId: number): Promise<RolePolicy[]> {
  const { rows } = await db.raw<{ rows: Array<{ roles: RolePolicy[] }> }>(`select ${ROLE_POLICIES} from (select ?::integer as id) u`, [userId])
  return rows[0]!.roles
}

/**
 * What the token check (plugins/app/auth.ts) reads on a miss of the caller cache, and the last
 * uses it notes: queries of its own, so that the check needs no resource's data access. Both
 * reads are prepared: they run on the first request of every token and key.
 */
export function callerQueries (database: Database, cacheSize: number) {
  const { knex } = database

  // The key's permissions are its own that its owner still holds.
  const keyCaller = prepare<[hash: string], KeyCaller>(database, 'api-keys.caller', hash => knex.raw(`
    select k.id::float8 as id, k.user_id, floor(extract(epoch from k.expires_at))::float8 as expires_at, k.rate_limit, k.rate_quota, ${ROLE_POLICIES}, ${HAS_FACTOR},
      array(select unnest(k.permissions)
        intersect
        select p.name from user_roles ur
          join role_permissions rp on rp.role_id = ur.role_id
          join permissions p on p.id = rp.permission_id
        where ur.user_id = k.user_id) as permissions
    from api_keys k join users u on u.id = k.user_id
    where k.hash = decode(?, 'hex') and k.revoked_at is null
      and (k.expires_at is null or k.expires_at > now()) and u.deleted_at is null`, [hash]))

  // Bound twice: `$2` and `$5` are the session, `$4` and `$6` the token's id.
  const tokenCaller = prepare<[id: number, sessionId: number | null, generation: number | null, jti: string], TokenCaller>(
    database, 'auth.caller', (id, sessionId, generation, jti) => knex.raw(`
        select coalesce(array_agg(distinct p.name) filter (where p.name is not null), '{}') as permissions, ${ROLE_POLICIES}, ${HAS_FACTOR}
        from users u
        left join user_roles ur on ur.user_id = u.id
        left join role_permissions rp on rp.role_id = ur.role_id
        left join permissions p on p.id = rp.permission_id
        where u.id = ? and u.deleted_at is null
          and case when ?::bigint is null
            then u.token_generation = ? or exists (select 1 from kept_tokens k
              where k.jti = ? and k.user_id = u.id and k.token_generation = u.token_generation)
            else exists (select 1 from sessions s
              where s.id = ?::bigint and s.user_id = u.id and s.ended_at is null and s.expires_at > now())
          end
          and not exists (select 1 from revoked_tokens where jti = ?)
        group by u.id`, [id, sessionId, generation, jti, sessionId, jti]))

  // Each UPDATE skips a row written less than a minute ago, as another instance may have.
  const keyUse = new LastUse(cacheSize, id => knex('api_keys').where('id', id)
    .where(qb => qb.whereNull('last_used_at').orWhere('last_used_at', '<', knex.raw("now() - interval '1 minute'")))
    .update({ last_used_at: knex.fn.now() }))
  const sessionUse = new LastUse(cacheSize, sessionId => knex('sessions').where('id', sessionId)
    .where('last_used_at', '<', knex.raw("now() - interval '1 minute'"))
    .update({ last_used_at: knex.fn.now() }))

  return {
    /** The key of this secret, if it holds: not revoked nor expired, its owner not deleted. */
    async keyCaller (secret: string): Promise<KeyCaller | undefined> {
      return (await keyCaller([apiKeyHash(secret)])).rows[0]
    },

    /**
     * The permissions of the token's user and their roles' policies, or undefined if the token no longer holds (its user
     * deleted, its session ended, the token revoked; a token of no session, issued before
     * sessions were: its generation ended unless the token was kept; a session's token has no
     * generation that counts).
     */
    async tokenCaller (id: number, generation: number | undefined, jti: string, sessionId: number | undefined): Promise<TokenCaller | undefined> {
      const { rows } = await tokenCaller([id, sessionId ?? null, generation ?? null, jti])
      return rows[0]
    },

    /** Notes that the key was used now (lib/auth/last-use.ts). */
    noteKeyUse: (id: number) => keyUse.note(id),
    /** Notes that the session was used now. */
    noteSessionUse: (id: number) => sessionUse.note(id)
  }
}
