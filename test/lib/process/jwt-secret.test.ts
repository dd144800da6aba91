import { mkdir, mkdtemp, readdir, readFile, readlink, rm, stat, symlink, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import t, { type Test } from 'tap'
import { loadConfig } from '../../../lib/process/config.js'
import { withJwtSecret } from '../../../lib/process/jwt-secret.js'

async function tempDir (t: Test): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'jwt-secret-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  return dir
}

t.test('on the embedded database without JWT_SECRET, start-up generates a secret in DATA_DIR once and keeps it', async t => {
  const dataDir = path.join(await tempDir(t), 'data')
  const config = withJwtSecret(loadConfig({ DATA_DIR: dataDir }))
  const file = path.join(dataDir, 'jwt-secret')
  t.equal(await readFile(file, 'utf8'), config.auth.jwtSecret, 'written in DATA_DIR (made if missing)')
  t.ok(Buffer.byteLength(config.auth.jwtSecret) >= 32, 'of 32 bytes or more')
  t.equal((await stat(file)).mode & 0o777, 0o600, 'readable by its owner only')
  t.equal(withJwtSecret(loadConfig({ DATA_DIR: dataDir })).auth.jwtSecret, config.auth.jwtSecret, 'the same at the next start')
})

t.test('JWT_SECRET is used as given, and nothing is written', async t => {
  const dataDir = await tempDir(t)
  const secret = 'y'.repeat(32)
  t.equal(withJwtSecret(loadConfig({ DATA_DIR: dataDir, JWT_SECRET: secret })).auth.jwtSecret, secret)
  t.equal(withJwtSecret(loadConfig({ DB_HOST: 'db', DATA_DIR: dataDir, JWT_SECRET: secret })).auth.jwtSecret, secret)
  await t.rejects(stat(path.join(dataDir, 'jwt-secret')), { code: 'ENOENT' })
})

t.test('a DATA_DIR where the secret cannot be kept stops start-up', async t => {
  const dataDir = await tempDir(t)
  // A folder where the file should be: neither readable as a secret nor replaceable.
  await mkdir(path.join(dataDir, 'jwt-secret'))
  t.throws(() => withJwtSecret(loadConfig({ DATA_DIR: dataDir })), { code: 'EISDIR' })
})

t.test('a kept secret cut short stops start-up rather than sign with it', async t => {
  const dataDir = await tempDir(t)
  await writeFile(path.join(dataDir, 'jwt-secret'), 'short')
  t.throws(() => withJwtSecret(loadConfig({ DATA_DIR: dataDir })), { name: 'ConfigError', message: /holds no JWT secret of 32 bytes or more/ })
})

t.test('a secret put in place meanwhile by another process is never replaced', async t => {
  const dataDir = await tempDir(t)
  // What a process that starts at the same moment leaves between this one's read and its write:
  // a name already taken (here a link to a secret not yet written).
  const file = path.join(dataDir, 'jwt-secret')
  await symlink(path.join(dataDir, 'elsewhere'), file)
  t.throws(() => withJwtSecret(loadConfig({ DATA_DIR: dataDir })), { code: 'ENOENT' }, 'the other one is read, not overwritten')
  t.equal(await readlink(file), path.join(dataDir, 'elsewhere'), 'still in place')
  t.same((await readdir(dataDir)).sort(), ['jwt-secret'], 'no draft left behind')
})
