import type { LookupAddress } from 'node:dns'
import t from 'tap'
import { forbiddenRange, publicLookup, urlProblem } from '../../../lib/webhooks/public-address.js'

t.test('the ranges a webhook may not reach, IPv4 and IPv6, an IPv4 address written as IPv6 by its own', async t => {
  for (const [address, range] of [['127.0.0.1', 'loopback'], ['10.0.0.1', 'private'], ['172.16.5.4', 'private'], ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'], ['100.64.0.1', 'carrierGradeNat'], ['0.0.0.0', 'unspecified'], ['224.0.0.1', 'multicast'],
    ['::1', 'loopback'], ['fe80::1', 'linkLocal'], ['fd00:ec2::254', 'uniqueLocal'], ['::ffff:127.0.0.1', 'loopback'], ['::', 'unspecified'], ['::127.0.0.1', 'loopback'], ['::7f00:1', 'ipv4Compatible'], ['::808:808', 'ipv4Compatible']] as const) {
    t.equal(forbiddenRange(address), range, address)
  }
  for (const address of ['93.184.215.14', '8.8.8.8', '2606:4700:4700::1111']) t.equal(forbiddenRange(address), undefined, `${address} is public`)
})

t.test('a URL: http or https, no credentials, public addresses only unless allowed', async t => {
  t.equal(await urlProblem(new URL('http://127.0.0.1/'), true), undefined, 'allowed')
  t.match(await urlProblem(new URL('http://127.0.0.1/'), false), /127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address/)
  t.match(await urlProblem(new URL('http://[::1]:8080/'), false), /::1 resolves to ::1, a loopback address/)
  t.equal(await urlProblem(new URL('http://no-such-host.invalid/'), false), undefined, 'a host that does not resolve yet passes')
  t.equal(await urlProblem(new URL('https://8.8.8.8/'), false), undefined, 'a public address passes')
  t.match(await urlProblem(new URL('file:///etc/passwd'), true), /http or https/)
  t.match(await urlProblem(new URL('https://:secret@example.com/'), true), /no credentials/, 'a password alone too')
})

t.test('the lookup of a delivery\'s connection refuses a host that resolves to an address not public', async t => {
  const lookup = (hostname: string, options: object) => new Promise<{ error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number }>(resolve =>
    publicLookup(hostname, options, (error, address, family) => resolve({ error, address, family })))
  t.match((await lookup('localhost', {})).error, { message: /localhost resolves to .*, a loopback address/ })
  t.match((await lookup('localhost', { all: true })).error, { message: /a loopback address/ })
  t.match((await lookup('no-such-host.invalid', {})).error, { code: 'ENOTFOUND' })
  const one = await lookup('8.8.8.8', {})
  t.same([one.error, one.address, one.family], [null, '8.8.8.8', 4], 'a public address, as one')
  const all = await lookup('8.8.8.8', { all: true })
  t.same([all.error, all.address], [null, [{ address: '8.8.8.8', family: 4 }]], 'or as all of them')
})
