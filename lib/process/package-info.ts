import { existsSync, readFileSync } from 'node:fs'
import path from 'node:path'

/** What package.json says of the service: read from the sources and from the compiled dist/ alike. */
export interface PackageInfo { name: string, version: string, license: string }

/** The folder of package.json: this module's, or one above it (dist/lib/ in the compiled tree). */
function packageFolder (dir: string): string {
  if (existsSync(path.join(dir, 'package.json'))) return dir
  const parent = path.dirname(dir)
  /* c8 ignore next -- a copy of the code without its package.json */
  if (parent === dir) throw new Error(`No package.json above ${import.meta.dirname}`)
  return packageFolder(parent)
}

export const packageRoot = packageFolder(import.meta.dirname)
export const packageInfo: PackageInfo = JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8'))
