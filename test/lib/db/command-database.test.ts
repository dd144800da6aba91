import { mkdtemp, rm } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t from 'tap'
import { ensureCommandDatabase } from '../../../lib/db/command-database.js'
import { loadConfig } from '../../../lib/process/config.js'
import { TEST_JWT_SECRET } from '../../helper.js'

t.test('a command that cannot claim the data folder fails with the cause, not as if a server held it', async t => {
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'command-db-'))
  t.teardown(() => rm(dataDir, { recursive: true, force: true }))
  const config = loadConfig({ JWT_SECRET: TEST_JWT_SECRET, DATA_DIR: dataDir })
  // The claim's socket lives in the temporary folder: one that does not exist.
  const tmpdir = process.env.TMPDIR
  process.env.TMPDIR = path.join(dataDir, 'no such folder')
  t.teardown(() => { if (tmpdir === undefined) delete process.env.TMPDIR; else process.env.TMPDIR = tmpdir })
  await t.rejects(ensureCommandDatabase(config), { syscall: 'listen', message: /no such folder/ })
})
