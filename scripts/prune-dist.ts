// Removes from dist/ the outputs of sources that no longer exist, after an incremental build
// (npm run compile): TypeScript leaves them behind, and the route autoloader would still load a
// deleted route's compiled file. Only a `.js` or `.js.map` whose `.ts` is gone is removed, and
// the folders this leaves empty; what the build still produces is never touched, so a server
// running from dist/ meanwhile keeps its files.
//   node dist/scripts/prune-dist.js [dist folder] [source folder]
import { readdir, rm, rmdir, stat } from 'node:fs/promises'
import path from 'node:path'

const dist = path.resolve(process.argv[2] ?? 'dist')
const sources = path.resolve(process.argv[3] ?? '.')

const exists = (file: string) => stat(file).then(() => true, () => false)

/** Prunes a folder of dist/; true when nothing is left in it. */
async function prune (folder: string): Promise<boolean> {
  const entries = await readdir(folder, { withFileTypes: true })
  let left = entries.length
  for (const entry of entries) {
    const file = path.join(folder, entry.name)
    if (entry.isDirectory()) {
      if (await prune(file)) {
        await rmdir(file)
        left--
      }
      continue
    }
    const output = /^(.*)\.js(\.map)?$/.exec(entry.name)
    if (!output) continue
    const source = path.join(sources, path.relative(dist, folder), `${output[1]}.ts`)
    if (!await exists(source)) {
      await rm(file)
      left--
      console.error(`removed ${path.relative(process.cwd(), file)}: its source ${path.relative(process.cwd(), source)} is gone`)
    }
  }
  return left === 0
}

if (await exists(dist)) await prune(dist)
