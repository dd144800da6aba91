import type { Options } from '@node-rs/argon2'

/** argon2id with the OWASP minimum: 19 MiB of memory, 2 passes, 1 lane. */
// `algorithm: 2` is Algorithm.Argon2id, a const enum that isolated modules cannot import.
export const ARGON2_OPTIONS = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 } satisfies Options

/** A cost of argon2id hashes: the service's is ARGON2_OPTIONS, whatever the environment says. */
export type Argon2Options = typeof ARGON2_OPTIONS
