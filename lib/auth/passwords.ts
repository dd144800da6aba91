import os from 'node:os'
import { ARGON2_OPTIONS } from './argon2-options.js'
import { HashThreads } from './hash-threads.js'
import { InvalidFields } from '../http/invalid-fields.js'

/**
 * Hashes running at once: one per core, on threads of their own (lib/auth/hash-threads.ts). On
 * two cores four at once verified 15 % fewer a second than two, each holding its 19 MiB.
 */
const hashing = new HashThreads(os.availableParallelism())

export function hashPassword (password: string): Promise<string> {
  return hashing.hash(password, ARGON2_OPTIONS)
}

// Checked when no user has the e-mail address, so that a wrong address costs as much time
// as a wrong password and the answer's timing tells nothing.
const dummyHash = hashPassword('no user has this password')

/** The password to store, once `c_password` is seen to repeat it (else 400). */
export function confirmedPassword (password: string, confirmation: string | undefined): string {
  if (confirmation !== password) throw new InvalidFields({ c_password: ['must equal password'] })
  return password
}

/**
 * Whether the password matches the hash; with no hash, the same work for a certain no.
 * Undefined, with nothing hashed, when `unwanted` says at its turn to hash that nobody waits
 * for the answer any more.
 */
export async function verifyPassword (hashed: string | undefined, password: string, unwanted: () => boolean): Promise<boolean | undefined> {
  const against = hashed ?? await dummyHash
  const matches = await hashing.verify(against, password, unwanted)
  if (matches === undefined) return undefined
  return hashed !== undefined && matches
}
