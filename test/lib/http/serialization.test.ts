import t from 'tap'
import { buildSerializer } from '../../../lib/http/serialization.js'

const route = (schema: unknown) => ({ method: 'GET', url: '/x', httpStatus: '200', schema })
const record = { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' } } }

t.test('a response schema is compiled once a process: a second app gets the same serializer, which writes only the schema\'s fields', async t => {
  const first = buildSerializer({}, {})(route(record))
  const second = buildSerializer({}, {})(route(structuredClone(record)))
  t.equal(second, first, 'the same function for the same schema text')
  t.equal(first({ id: 1, name: 'Ada', password: 'x' }), '{"id":1,"name":"Ada"}')
  t.not(buildSerializer({}, {})(route({ ...record, required: ['id'] })), first, 'another schema, another serializer')
})

t.test('shared schemas and options are part of what a serializer is: other ones compile their own', async t => {
  const referring = route({ $ref: 'shared#' })
  const asInteger = buildSerializer({ shared: { $id: 'shared', type: 'object', properties: { n: { type: 'integer' } } } }, {})(referring)
  const asString = buildSerializer({ shared: { $id: 'shared', type: 'object', properties: { n: { type: 'string' } } } }, {})(referring)
  t.equal(asInteger({ n: '7' }), '{"n":7}')
  t.equal(asString({ n: 7 }), '{"n":"7"}')
  const rounding = buildSerializer({}, { rounding: 'ceil' })(route({ type: 'integer' }))
  t.equal(rounding(1.2), '2', 'the options a factory was given')
  t.equal(buildSerializer({}, {})(route({ type: 'integer' }))(1.2), '1')
})

t.test('a shared schema compiled as a response of its own leaves the shared ones whole for the next app\'s references', async t => {
  const shared = { point: { $id: 'point', type: 'object', properties: { n: { type: 'integer' } } } }
  t.equal(buildSerializer(shared, {})(route(shared.point))({ n: 1 }), '{"n":1}')
  t.equal(buildSerializer(structuredClone(shared), {})(route({ $ref: 'point#' }))({ n: '7' }), '{"n":7}', 'another app, the same shared schemas')
})

t.test('a serializer is compiled at its first answer, not when the app is built: a schema it cannot compile throws only then', async t => {
  const serializer = buildSerializer({}, {})(route({ $ref: 'nowhere#' }))
  t.throws(() => serializer({}), /nowhere/)
})
