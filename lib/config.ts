import path from 'node:path'

/** Everything the service reads from its environment, validated once at start-up. */
export interface Config {
  port: number
  host: string
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent'
  /** Where the embedded PostgreSQL keeps its data when no DB_HOST is given. */
  dataDir: string
  db: DatabaseConfig | null
  dbPoolMax: number
}

export interface DatabaseConfig {
  host: string
  port: number
  database: string
  user: string
  password: string
}

export class ConfigError extends Error {
  override name = 'ConfigError'
}

type Env = Record<string, string | undefined>

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const

function text (env: Env, name: string, fallback: string): string {
  const value = env[name]?.trim()
  return value === undefined || value === '' ? fallback : value
}

function integer (env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name]?.trim()
  if (raw === undefined || raw === '') return fallback
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`)
  }
  return Number(raw)
}

function oneOf<T extends string> (env: Env, name: string, fallback: T, allowed: readonly T[]): T {
  const raw = text(env, name, fallback)
  if (!(allowed as readonly string[]).includes(raw)) {
    throw new ConfigError(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`)
  }
  return raw as T
}

/** Reads and validates the configuration; throws a ConfigError naming the bad variable. */
export function loadConfig (env: Env = process.env): Config {
  const dbHost = env.DB_HOST?.trim()
  return {
    port: integer(env, 'PORT', 3000, 0, 65535),
    host: text(env, 'HOST', 'localhost'),
    logLevel: oneOf(env, 'LOG_LEVEL', 'info', LOG_LEVELS),
    dataDir: path.resolve(text(env, 'DATA_DIR', '.data')),
    db: dbHost
      ? {
          host: dbHost,
          port: integer(env, 'DB_PORT', 5432, 1, 65535),
          database: text(env, 'DB_NAME', 'postgres'),
          user: text(env, 'DB_USER', 'postgres'),
          password: env.DB_PASSWORD ?? ''
        }
      : null,
    dbPoolMax: integer(env, 'DB_POOL_MAX', 10, 1, 1000)
  }
}
