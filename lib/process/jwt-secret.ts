import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import type { Config, LoadedConfig } from './config.js'

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
  if (existsSync(file)) return readFileSync(file, 'utf8')
  const generated = randomBytes(48).toString('base64url')
  mkdirSync(dataDir, { recursive: true })
  // 'wx': never over a secret that another process wrote meanwhile (it would end its tokens).
  writeFileSync(file, generated, { flag: 'wx', mode: 0o600 })
  return generated
}
