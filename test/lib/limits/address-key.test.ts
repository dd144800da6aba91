import t from 'tap'
import { addressKey } from '../../../lib/limits/address-key.js'

t.test('an address is limited by one key however it is spelled: IPv4 as it is, IPv6 by its /64', async t => {
  t.equal(addressKey('10.0.0.1'), '10.0.0.1')
  t.equal(addressKey('::ffff:10.0.0.1'), '10.0.0.1', 'IPv4-mapped: its IPv4')
  t.equal(addressKey('::FFFF:10.0.0.1'), '10.0.0.1')
  for (const spelling of ['2001:db8::1', '2001:DB8::1', '2001:0db8:0::1', '2001:db8::1:1', '2001:db8:0:0:ffff::']) t.equal(addressKey(spelling), '2001:db8:0:0::/64', spelling)
  t.equal(addressKey('2001:db8:0:1::5'), '2001:db8:0:1::/64', 'another /64')
  t.equal(addressKey('2001:db8:1:2:3:4:5:6'), '2001:db8:1:2::/64', 'no ::')
  t.equal(addressKey('1::2:3:4:5:6.7.8.9'), '1:0:2:3::/64', 'a dotted tail stands for two groups')
  t.equal(addressKey('::1'), '0:0:0:0::/64')
  t.equal(addressKey('hello world'), 'not-an-address')
  t.equal(addressKey('x'.repeat(7_000)), 'not-an-address', 'no key as long as what was sent')
})
