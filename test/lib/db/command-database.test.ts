import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { ensureCommandDatabase } from '../../../lib/db/command-database.js'
import { loadConfig } from '../../../lib/process/config.js'
import { TEST_JWT_SECRET } from '../../helper.js'

t.test('a command that cannot claim the data folder fails with the cause, not as if a server held it', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'command-db-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  // The claim's socket lives in DATA_DIR: one that cannot be made, below a file.
  const file = path.join(dataDir, 'a file')
  await writeFile(file, '')
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, DATA_DIR: path.join(file, 'data') })
  await t.rejects(ensureCommandDatabase(config), { code: 'ENOTDIR' })
})
