import type { Knex } from 'knex'

/**
 * The form of a rate limit or a quota, `<count>/<duration>` or `off`, as RATE_LIMIT takes one;
 * lib/limits/rate-policy.ts reads what it means (and counts what it cannot read as none). No
 * `?` in it: knex would read one as a binding.
 */
const FORM = String.raw`^(off|[0-9]{1,10}/[0-9]{1,10}(ms|s|m|h|d){0,1})$`

/**
 * Policies of their own (plugins/app/rate-limits.ts): a role's (`rate_limit`, `rate_quota`,
 * null for RATE_LIMIT's and RATE_QUOTA's), which its holders have at the most generous of
 * their roles'; a key's, stricter than its owner's, spent beside theirs. A change of either
 * is heard by every instance's caller cache, as a change of permissions is: a role's changes
 * every holder's (`all`; a rename too, as the policy goes by the role's name), a key's its own
 * (`key:<id>`).
 */
export async function up (knex: Knex): Promise<void> {
  for (const table of ['roles', 'api_keys']) {
    await knex.raw(`alter table ${table}
      add column rate_limit text constraint ${table}_rate_limit_form check (rate_limit ~ '${FORM}'),
      add column rate_quota text constraint ${table}_rate_quota_form check (rate_quota ~ '${FORM}')`)
  }
  await knex.raw(`
    create trigger roles_policy_changed after update of name, rate_limit, rate_quota on roles
      for each statement execute function notify_auth_changed();
    drop trigger api_keys_revoked on api_keys;
    create trigger api_keys_revoked after update of revoked_at, permissions, expires_at, rate_limit, rate_quota on api_keys
      for each row execute function notify_api_key_changed();`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw(`
    drop trigger roles_policy_changed on roles;
    drop trigger api_keys_revoked on api_keys;
    create trigger api_keys_revoked after update of revoked_at, permissions, expires_at on api_keys
      for each row execute function notify_api_key_changed();`)
  for (const table of ['roles', 'api_keys']) await knex.raw(`alter table ${table} drop column rate_limit, drop column rate_quota`)
}
