import { execFile } from 'node:child_process'
import { cp, mkdtemp, readdir, rm, stat, symlink } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import type { Test } from 'tap'

const run = promisify(execFile)

/** What `npm run compile` reads: the sources and configuration, none of tests, benchmark or dist/. */
const SOURCES = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'app.ts', 'knexfile.ts', 'server.ts', 'db', 'lib', 'plugins', 'routes', 'schemas', 'scripts']

/**
 * A copy of the checkout's sources in a folder of its own, sharing its node_modules, for the npm
 * scripts to compile and run there as in a checkout: this one's dist/ and sources stay as they are.
 */
export async function checkout (t: Test): Promise<string> {
  const folder = await mkdtemp(path.join(os.tmpdir(), 'students-checkout-'))
  t.teardown(() => rm(folder, { recursive: true, force: true }))
  for (const source of SOURCES) await cp(source, path.join(folder, source), { recursive: true })
  await symlink(path.resolve('node_modules'), path.join(folder, 'node_modules'))
  return folder
}

/**
 * `env` for an npm script of a checkout: without the test runner's loaders and settings (its
 * coverage of the copy's files, TypeScript routes), with this Node.js first on the PATH.
 */
export function scriptEnv (env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const clean = Object.fromEntries(Object.entries(env).filter(([name]) => !/^(_?TAP|NODE_OPTIONS$|FASTIFY_AUTOLOAD_TYPESCRIPT$|TS_NODE_)/.test(name)))
  return { ...clean, PATH: `${path.dirname(process.execPath)}${path.delimiter}${env.PATH}` }
}

/** `npm run <script> -- <args>` in a checkout. */
export function npmRun (folder: string, env: NodeJS.ProcessEnv, script: string, ...args: string[]) {
  return run('npm', ['run', '--silent', script, ...args.length ? ['--', ...args] : []], { cwd: folder, env: scriptEnv(env) })
}

/** Every file of a checkout's dist/, with its inode and modification time: what a build that rewrites or deletes it changes. */
export async function outputs (folder: string): Promise<Record<string, string>> {
  const dist = path.join(folder, 'dist')
  const files = await readdir(dist, { recursive: true, withFileTypes: true })
  const entries = await Promise.all(files.filter(file => file.isFile()).map(async file => {
    const full = path.join(file.parentPath, file.name)
    const { ino, mtimeNs } = await stat(full, { bigint: true })
    return [path.relative(dist, full), `${ino} ${mtimeNs}`] as const
  }))
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)))
}
