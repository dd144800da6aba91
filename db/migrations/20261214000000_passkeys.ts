import type { Knex } from 'knex'

/**
 * Passkeys (WebAuthn; routes/api/(authenticated)/profile/passkeys/, routes/api/(public)/login/):
 * - `passkeys`: a user's credentials, by the id the authenticator gave them (base64url), with
 *   their public key (COSE) and the signature counter last seen, which a cloned authenticator
 *   would set back.
 * - `webauthn_challenges`: a ceremony under way, by the SHA-256 of the opaque token its options
 *   came with: the challenge the browser must sign, and for a registration whose passkey it
 *   makes (null for a login, whose user the passkey names).
 */
export async function up (knex: Knex): Promise<void> {
  await knex.raw(`
    create table passkeys (
      id serial primary key,
      user_id integer not null references users (id) on delete cascade,
      credential_id text not null unique,
      public_key bytea not null,
      counter bigint not null default 0,
      transports text[] not null default '{}',
      name text not null,
      created_at timestamptz not null default now(),
      last_used_at timestamptz
    );
    create index passkeys_user_id on passkeys (user_id);

    create table webauthn_challenges (
      token_hash bytea primary key,
      user_id integer references users (id) on delete cascade,
      challenge text not null,
      expires_at timestamptz not null
    );
    create index webauthn_challenges_expires_at on webauthn_challenges (expires_at)`)
}

export async function down (knex: Knex): Promise<void> {
  await knex.raw('drop table webauthn_challenges; drop table passkeys')
}
