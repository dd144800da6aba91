import t from 'tap'
import { canonicalJson } from '../../../lib/http/canonical-json.js'

t.test('canonicalJson: keys sorted at every level, arrays in their order, JSON.stringify\'s scalars', async t => {
  const a = { b: 1, a: { z: [3, { y: 'é', x: null }], c: true }, 10: '', 9: 1.5e-7 }
  const b = { 9: 1.5e-7, a: { c: true, z: [3, { x: null, y: 'é' }] }, 10: '', b: 1 }
  t.equal(canonicalJson(a), '{"10":"","9":1.5e-7,"a":{"c":true,"z":[3,{"x":null,"y":"é"}]},"b":1}')
  t.equal(canonicalJson(b), canonicalJson(a), 'the order of keys does not matter')
  t.not(canonicalJson({ a: [1, 2] }), canonicalJson({ a: [2, 1] }), 'the order of items does')
  t.same(JSON.parse(canonicalJson(a)!), a, 'the same value')
  t.equal(canonicalJson({ a: undefined, b: [undefined] }), '{"b":[null]}', 'undefined as JSON.stringify has it')
  t.equal(canonicalJson(undefined), undefined)
  t.equal(canonicalJson('x"'), '"x\\""')
})
