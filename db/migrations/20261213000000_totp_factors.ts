import type { Knex } from 'knex'

/**
 * Second factors (routes/api/(authenticated)/profile/mfa/, routes/api/(public)/login/):
 * - `totp_factors`: a user's authenticator app (RFC 6238), one a user. Its secret is kept as
 *   is: a code is checked against it, so no hash can stand in for it. `confirmed_at` is null
 *   while the enrolment waits for a first code; `last_step` is the time step of the last code
 *   accepted, so that no code works twice; `failures` counts the wrong codes in a row (of a
 *   login, across its challenges; of an enrolment, its confirmations), and `locked_until` holds
 *   a login's codes back after too many.
 * - `recovery_codes`: the codes that stand in for a lost device, by their SHA-256 (random, so
 *   no slow hash is needed), each spent once.
 * - `mfa_challenges`: a login whose password matched and that waits for its second factor, by
 *   the SHA-256 of the opaque token the login answered; `password_digest` is the SHA-256 of
 *   the password hash the login matched (a password changed since voids it, as it voids a
 *   login in flight; no copy of the hash itself); `failures` counts its wrong codes.
 * A factor confirmed or ended tells every instance (`user:<id>` on `auth_changed`, as a change
 * of roles does): with MFA_REQUIRED_ROLES, whether a token serves only an enrolment hangs on it.
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create table totp_factors (
      user_id integer primary key references users (id) on delete cascade,
      secret text not null,
      confirmed_at timestamptz,
      last_step bigint,
      failures integer not null default 0,
      locked_until timestamptz,
      created_at timestamptz not null default now()
    );

    create table recovery_codes (
      user_id integer not null references users (id) on delete cascade,
      code_hash bytea not null,
      used_at timestamptz,
      primary key (user_id, code_hash)
    );

    create table mfa_challenges (
      token_hash bytea primary key,
      user_id integer not null references users (id) on delete cascade,
      password_digest bytea not null,
      expires_at timestamptz not null,
      failures integer not null default 0
    );
    create index mfa_challenges_user_id on mfa_challenges (user_id);

    create trigger totp_factors_auth_changed after insert or update of confirmed_at or delete on totp_factors
      for each row execute function notify_auth_changed()`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop table mfa_challenges; drop table recovery_codes; drop table totp_factors')
}
