import t from 'tap'
import { build } from '../../helper.js'

t.test('password hashing is the app\'s, and its threads end when the app closes', async t => {
  const app = await build(t)
  const hash = await app.passwords.hash('correct horse battery')
  t.match(hash, /^\$argon2id\$v=19\$m=64,t=1,p=1\$/, 'argon2id, at the cost the configuration gives (TEST_HASHING)')
  t.equal(await app.passwords.verify(hash, 'correct horse battery', () => false), true)
  t.equal(await app.passwords.verify(hash, 'wrong horse battery', () => false), false)
  t.equal(await app.passwords.verify(undefined, 'correct horse battery', () => false), false, 'no hash: a certain no, after the same work')
  t.ok(app.passwords.threads > 0, 'threads at work')
  await app.close()
  t.equal(app.passwords.threads, 0, 'none left once closed')
})
