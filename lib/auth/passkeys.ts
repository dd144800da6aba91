import type {
  AuthenticationResponseJSON, PublicKeyCredentialCreationOptionsJSON, PublicKeyCredentialRequestOptionsJSON, RegistrationResponseJSON
} from '@simplewebauthn/server'
import type { PasskeyConfig } from '../process/config.js'

// Loaded at the first ceremony (which waits some 0.3 s for it): most processes never see a
// passkey, and its few hundred modules (ASN.1, X.509, COSE) cost every start (docs/performance.md).
let library: Promise<typeof import('@simplewebauthn/server')> | undefined
const webAuthn = () => (library ??= import('@simplewebauthn/server'))

/** How long a browser has to answer a ceremony's options. */
export const PASSKEY_TIMEOUT_SECONDS = 300

/** A passkey as the database keeps it: what checks its signatures. */
export interface StoredPasskey { credentialId: string, publicKey: Buffer, counter: number, transports: string[] }

/**
 * The options of a passkey's registration: a passkey the authenticator keeps (so that a login
 * needs no address), its user verified (a PIN, a fingerprint: the passkey stands for both
 * factors), none on an authenticator that has one of the user's already.
 */
export async function registrationOptions (config: PasskeyConfig, siteName: string, user: { email: string, name: string }, existing: string[]): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return await (await webAuthn()).generateRegistrationOptions({
    rpName: siteName,
    rpID: config.rpId,
    userName: user.email,
    userDisplayName: user.name,
    timeout: PASSKEY_TIMEOUT_SECONDS * 1000,
    attestationType: 'none',
    excludeCredentials: existing.map(id => ({ id })),
    authenticatorSelection: { residentKey: 'required', userVerification: 'required' }
  })
}

/** The passkey a registration's answer makes, if it answers `challenge` from one of the origins; undefined otherwise. */
export async function registeredPasskey (config: PasskeyConfig, response: RegistrationResponseJSON, challenge: string): Promise<StoredPasskey | undefined> {
  try {
    const { verified, registrationInfo } = await (await webAuthn()).verifyRegistrationResponse({
      response, expectedChallenge: challenge, expectedOrigin: config.origins, expectedRPID: config.rpId, requireUserVerification: true
    })
    // With no attestation asked ('none'), no statement is verified: the library throws for
    // every failure it finds, and `verified` is false only for a statement that does not hold.
    /* c8 ignore next */
    if (!verified) return undefined
    const { id, publicKey, counter, transports = [] } = registrationInfo.credential
    return { credentialId: id, publicKey: Buffer.from(publicKey), counter, transports }
  } catch {
    // The library throws for every answer it cannot take (malformed, another origin, a bad
    // signature): to the caller, all are the same refusal.
    return undefined
  }
}

/** The options of a login: any passkey of the site (the authenticator offers the user's), the user verified. */
export async function authenticationOptions (config: PasskeyConfig): Promise<PublicKeyCredentialRequestOptionsJSON> {
  return await (await webAuthn()).generateAuthenticationOptions({ rpID: config.rpId, userVerification: 'required', timeout: PASSKEY_TIMEOUT_SECONDS * 1000 })
}

/** The passkey's new signature counter, if the login's answer is its signature of `challenge`; undefined otherwise. */
export async function authenticatedCounter (config: PasskeyConfig, response: AuthenticationResponseJSON, challenge: string, passkey: StoredPasskey): Promise<number | undefined> {
  try {
    const { verified, authenticationInfo } = await (await webAuthn()).verifyAuthenticationResponse({
      response,
      expectedChallenge: challenge,
      expectedOrigin: config.origins,
      expectedRPID: config.rpId,
      credential: { id: passkey.credentialId, publicKey: new Uint8Array(passkey.publicKey), counter: passkey.counter, transports: passkey.transports },
      requireUserVerification: true
    })
    return verified ? authenticationInfo.newCounter : undefined
  } catch {
    // A counter gone back (a cloned authenticator), another origin, a bad signature: refused alike.
    return undefined
  }
}
