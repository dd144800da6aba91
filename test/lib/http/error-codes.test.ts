import t from 'tap'
import { codeOf, CodedError } from '../../../lib/http/error-codes.js'

t.test('an error of a status no code falls back to is bad_request below 500, internal_error from 500', async t => {
  t.equal(codeOf({}, 418), 'bad_request')
  t.equal(codeOf({}, 502), 'internal_error')
  t.equal(codeOf({}, 404), 'not_found', 'a status with a fallback gets it')
  t.equal(codeOf(new CodedError('email_taken', 'taken'), 409), 'email_taken', 'its own code first')
})
