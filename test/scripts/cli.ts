import { execFile } from 'node:child_process'
import { promisify } from 'node:util'

const run = promisify(execFile)

/** How a command ended: its exit code, and what it wrote. */
export interface Ran { code?: number, stdout: string, stderr: string }

/** Runs `scripts/<name>.ts` as `npm run <name>` would run it (here from its TypeScript), with `env` added. */
export const script = (name: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> =>
  run(process.execPath, [...process.execArgv, `scripts/${name}.ts`, ...args], { env: { ...process.env, ...env } })
    .then(({ stdout, stderr }) => ({ code: 0, stdout, stderr }), (error: Ran) => error)
