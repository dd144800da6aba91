import t from 'tap'
import { VerifiedTokens } from '../../../lib/auth/verified-tokens.js'

const NOW = 1_800_000_000_000
const claims = (name: string, exp = NOW / 1000 + 60) => ({ name, exp })

/** A verifier that counts its calls and refuses the tokens named `bad`. */
function verifier () {
  const calls: string[] = []
  const verify = (token: string) => {
    calls.push(token)
    if (token === 'bad') throw new Error('invalid')
    return claims(token)
  }
  return { calls, verify }
}

t.test('a token is verified once and its claims remembered until it expires', async t => {
  const tokens = new VerifiedTokens<{ name: string, exp: number }>(10)
  const { calls, verify } = verifier()
  t.same(tokens.claims('a', verify, NOW), claims('a'))
  t.same(tokens.claims('a', verify, NOW + 59_999), claims('a'), 'remembered')
  t.same(calls, ['a'], 'verified once')
  tokens.claims('a', verify, NOW + 60_000)
  t.same(calls, ['a', 'a'], 'at its expiry, verified again (and the verifier refuses an expired one)')
})

t.test('a token refused is not remembered, and refused again', async t => {
  const tokens = new VerifiedTokens<{ name: string, exp: number }>(10)
  const { calls, verify } = verifier()
  t.throws(() => tokens.claims('bad', verify, NOW), /invalid/)
  t.throws(() => tokens.claims('bad', verify, NOW), /invalid/)
  t.same(calls, ['bad', 'bad'])
})

t.test('at most `capacity` tokens, the oldest forgotten first; 0 keeps none', async t => {
  const tokens = new VerifiedTokens<{ name: string, exp: number }>(2)
  const { calls, verify } = verifier()
  for (const token of ['a', 'b', 'c', 'b', 'a']) tokens.claims(token, verify, NOW)
  t.same(calls, ['a', 'b', 'c', 'a'], 'a was forgotten for c, b was still known')

  const none = new VerifiedTokens<{ name: string, exp: number }>(0)
  const counted = verifier()
  none.claims('a', counted.verify, NOW)
  none.claims('a', counted.verify, NOW)
  t.same(counted.calls, ['a', 'a'])
})
