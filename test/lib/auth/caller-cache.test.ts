import t from 'tap'
import { CallerCache } from '../../../lib/auth/caller-cache.js'
import { namedPolicy } from '../../../lib/limits/rate-policy.js'

const policy = namedPolicy('default', null, null)

const caller = (userId: number) => ({ userId, permissions: new Set(['client-list']), policy })

t.test('keeps callers only while enabled, and only what no change overtook', async t => {
  const cache = new CallerCache(10)
  cache.set('a', caller(1), cache.version)
  t.equal(cache.get('a'), undefined, 'disabled: keeps nothing')

  cache.enable()
  cache.set('a', caller(1), cache.version)
  t.same(cache.get('a'), caller(1))

  const before = cache.version
  cache.forgetUser(99)
  cache.set('b', caller(2), before)
  t.equal(cache.get('b'), undefined, 'a lookup that a change overtook is not kept')

  cache.disable()
  t.equal(cache.size, 0, 'disabling forgets everything')
})

t.test('notifications forget the token, the user, the session, the key, or everything', async t => {
  const cache = new CallerCache(10)
  cache.enable()
  const fill = () => {
    cache.clear()
    for (const [jti, userId] of [['a', 1], ['b', 1], ['c', 2]] as const) cache.set(jti, caller(userId), cache.version)
  }
  fill()
  cache.apply('token:a')
  t.same([cache.get('a'), !!cache.get('b'), !!cache.get('c')], [undefined, true, true], 'token:a')
  fill()
  cache.apply('user:1')
  t.same([cache.get('a'), cache.get('b'), !!cache.get('c')], [undefined, undefined, true], 'user:1')
  cache.clear()
  cache.set('a', { ...caller(1), sessionId: 7 }, cache.version)
  cache.set('b', { ...caller(1), sessionId: 8 }, cache.version)
  cache.set('c', caller(1), cache.version)
  cache.apply('session:7')
  t.same([cache.get('a'), !!cache.get('b'), !!cache.get('c')], [undefined, true, true], 'session:7 forgets the tokens of that session only')
  cache.clear()
  cache.set('key:aa', { ...caller(1), keyId: 3, keyExpiresAt: null }, cache.version)
  cache.set('key:bb', { ...caller(1), keyId: 4, keyExpiresAt: null }, cache.version)
  cache.set('c', caller(1), cache.version)
  cache.apply('key:3')
  t.same([cache.get('key:aa'), !!cache.get('key:bb'), !!cache.get('c')], [undefined, true, true], 'key:3 forgets that key only')
  for (const payload of ['all', 'user:x', 'session:x', 'key:x', '']) {
    fill()
    cache.apply(payload)
    t.equal(cache.size, 0, `"${payload}" forgets everything`)
  }
})

t.test('holds at most its capacity, dropping the oldest; capacity 0 keeps nothing', async t => {
  const cache = new CallerCache(2)
  cache.enable()
  for (const jti of ['a', 'b', 'c']) cache.set(jti, caller(1), cache.version)
  t.same([cache.get('a'), !!cache.get('b'), !!cache.get('c')], [undefined, true, true])

  const none = new CallerCache(0)
  none.enable()
  none.set('a', caller(1), none.version)
  t.equal(none.size, 0)
})
