import { randomBytes } from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ConfigError, type Config, type LoadedConfig } from './config.js'

/**
 * The configuration with its JWT secret: JWT_SECRET's, or, on the embedded database without
 * one, the secret kept in DATA_DIR/jwt-secret, generated there the first time. A step of
 * start-up, taken while the process holds DATA_DIR (before the WORKERS are forked, which then
 * read the same file), so that reading the configuration writes nothing.
 */
export function withJwtSecret (config: LoadedConfig): Config {
  return { ...config, auth: { ...config.auth, jwtSecret: config.auth.jwtSecret ?? keptSecret(config.dataDir) } }
}

function keptSecret (dataDir: string): string {
  const file = path.join(dataDir, 'jwt-secret')
  const kept = unless('ENOENT', () => readFileSync(file, 'utf8'))
  if (kept !== undefined) return checked(kept, file)
  mkdirSync(dataDir, { recursive: true })
  // Written whole under another name, then linked into place: a process that starts at the same
  // moment (a script beside the service) never reads half a secret, and the link fails if the
  // other one was first, whose secret is then the one kept (another would end its tokens).
  const draft = `${file}.${process.pid}.tmp`
  writeFileSync(draft, randomBytes(48).toString('base64url'), { mode: 0o600 })
  unless('EEXIST', () => linkSync(draft, file))
  unlinkSync(draft)
  return checked(readFileSync(file, 'utf8'), file)
}

/** What `fn` returns, or undefined where it fails with this code (a file not there, or there already). */
function unless<T> (code: string, fn: () => T): T | undefined {
  try {
    return fn()
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === code) return undefined
    throw error
  }
}

/** A secret read back must be one: a file emptied or cut short by hand would sign with a weak key. */
function checked (secret: string, file: string): string {
  if (Buffer.byteLength(secret) < 32) throw new ConfigError(`${file} holds no JWT secret of 32 bytes or more: delete it (every token is then refused) or set JWT_SECRET`)
  return secret
}
